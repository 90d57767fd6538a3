# Bits must not depend on the compiler's choice of instructions: no fast-math, no contraction of
# a*b+c into an FMA (which rounds once instead of twice), no reassociation. Reductions are written
# as explicit fixed lanes in the sources, so auto-vectorisation cannot change their order.
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off;-fno-fast-math;-Wall;-Wextra>"
  "$<$<COMPILE_LANGUAGE:CUDA>:--fmad=false;-Xcompiler=-ffp-contract=off>")

# The asan preset: ASan + UBSan, every finding fatal (-fno-sanitize-recover), at -O1 as ASan's
# documentation advises for usable speed (-O0 runs the determinism label several times slower;
# -O1 keeps every check, and the same bits: no fast-math, no contraction).
if(SAMEBITS_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer;-O1>")
  add_link_options(-fsanitize=address,undefined)
endif()

# The fuzz preset: every library instrumented for libFuzzer's coverage and checked by ASan + UBSan
# (fuzz/CMakeLists.txt links the targets with -fsanitize=fuzzer). Coverage feedback comes from
# samebits' own code only (fuzz/coverage_ignorelist.txt says why).
if(SAMEBITS_FUZZ)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer>"
                      "$<$<COMPILE_LANGUAGE:CXX>:-fsanitize-coverage-ignorelist=${PROJECT_SOURCE_DIR}/fuzz/coverage_ignorelist.txt>")
  add_link_options(-fsanitize=address,undefined)
endif()
