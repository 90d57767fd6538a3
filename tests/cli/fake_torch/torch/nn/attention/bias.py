def causal_lower_right(q_len, kv_len):
    return ("causal_lower_right", q_len, kv_len)
