"""A log file for a child process's output that the parent reads while the child runs."""
import os
import tempfile


def child_log(prefix):
    """A new named file opened for append (O_APPEND). The child's stdout shares this file
    description, and so its offset: without O_APPEND the parent's seek(0) to read the log moves
    where the child writes next, and the child overwrites its earlier lines. (tempfile's own
    mode "a+" does not set O_APPEND on the descriptor it made, so the file is opened by name.)"""
    handle, path = tempfile.mkstemp(prefix=prefix, suffix=".log")
    os.close(handle)
    return open(path, "a+")
