"""A file written whole or not at all, for the bench tools' --json outputs (sdpa_reference.py,
ncu_opcode_mix.py): the text goes to a temporary file beside the destination, which then replaces
it in one rename; on any error the temporary file is removed and the OSError is the caller's to
report (each tool in its own words). The file gets the permissions open() would give a new one
(0666 less the umask), not mkstemp's 0600."""
import os
import tempfile


def creation_mode():
    """0666 less the process's umask (read by setting it, then put back)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_whole(path, text):
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".partial.")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, creation_mode())
        os.replace(tmp, path)
    except OSError:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        raise
