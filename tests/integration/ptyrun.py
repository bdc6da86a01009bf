#!/usr/bin/env python3
# ptyrun.py: runs a command on a pseudo-terminal of a given size, as a
# person's terminal would be, for the tests of `kubectl exec -t` and
# `drover exec -t`: copies what the command writes to stdout (bytes as
# they come); once the output holds TEXT, types --send's STR or sets
# --resize's size (each once, in order); exits with the command's exit
# code (128+N for a signal).
# Usage: ptyrun.py ROWS COLS [--send TEXT STR | --resize TEXT ROWS COLS]... -- CMD ARG...
import fcntl, os, pty, struct, sys, termios

def winsz(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

def main():
    a = sys.argv[1:]
    rows, cols = int(a[0]), int(a[1])
    a = a[2:]
    events = []
    while a and a[0] != "--":
        if a[0] == "--send":
            events.append((a[1].encode(), "send", a[2].encode().decode("unicode_escape").encode()))
            a = a[3:]
        elif a[0] == "--resize":
            events.append((a[1].encode(), "resize", (int(a[2]), int(a[3]))))
            a = a[4:]
        else:
            sys.exit("ptyrun.py: %s: expected --send, --resize or --" % a[0])
    cmd = a[1:]
    pid, m = pty.fork()
    if pid == 0:
        winsz(0, rows, cols)
        os.execvp(cmd[0], cmd)
    seen = b""
    out = sys.stdout.buffer
    while True:
        while events and events[0][0] in seen:
            _, kind, v = events.pop(0)
            if kind == "send":
                os.write(m, v)
            else:
                winsz(m, *v)
        try:
            b = os.read(m, 65536)
        except OSError:
            break
        if not b:
            break
        seen += b
        out.write(b)
        out.flush()
    _, st = os.waitpid(pid, 0)
    sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))

main()
