# server_auth_first.sh: authentication comes before the body (issue 12's
# abuse limits). 64 clients at once send `POST /v1/jobs` without a token,
# each announcing and then sending a 16 MiB body over a raw socket: every
# one gets 401, and the server's resident memory stays within 100 MB of
# what it was before (it used to read every body first: 29 MB -> 1.3 GB).
# An authenticated body over the cap still gets 413, and the server goes
# on answering.
. "$ROOT/tests/integration/lib.sh"

start_server

PID="$SERVER_PID" PORT="$SERVER_PORT" TOKEN="$ADMIN_TOKEN" python3 - <<'PY' || { tail -20 "$TEST_TMP/server.log" >&2; exit 1; }
import os, socket, sys, threading, time

pid, port, token = os.environ["PID"], int(os.environ["PORT"]), os.environ["TOKEN"]
N, SIZE = 64, 16 << 20
body = b" " * SIZE

def rss_kb():
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

def post(tok, size, out, i):
    """Headers, then the body (the server may stop reading it), then the reply."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    auth = "Authorization: Bearer %s\r\n" % tok if tok else ""
    s.sendall(("POST /v1/jobs HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/yaml\r\n"
               "Content-Length: %d\r\n\r\n" % (auth, size)).encode())
    try:
        s.sendall(body[:size])
    except OSError:
        pass   # refused and closed: the reply is already here
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    s.close()
    out[i] = got.split(b"\r\n", 1)[0].decode(errors="replace")

before = rss_kb()
peak = [before]
done = threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss_kb())
        time.sleep(0.02)
sampler = threading.Thread(target=sample)
sampler.start()
out = [None] * N
t0 = time.monotonic()
ths = [threading.Thread(target=post, args=(None, SIZE, out, i)) for i in range(N)]
for t in ths:
    t.start()
for t in ths:
    t.join()
secs = time.monotonic() - t0
done.set()
sampler.join()
after = rss_kb()
print("64 unauthenticated 16 MiB POST /v1/jobs in %.2f s: VmRSS before %d kB, peak %d kB, after %d kB"
      % (secs, before, peak[0], after))
bad = [o for o in out if not (o or "").startswith("HTTP/1.1 401")]
if bad:
    sys.exit("FAIL: %d of %d replies were not 401: %s" % (len(bad), N, bad[:3]))
if peak[0] - before > 100 * 1024:
    sys.exit("FAIL: VmRSS grew by %d kB (over 100 MB)" % (peak[0] - before))

one = [None]
post(token, SIZE + 1, one, 0)
if not (one[0] or "").startswith("HTTP/1.1 413"):
    sys.exit("FAIL: an authenticated body over the cap got %r, not 413" % one[0])
PY

"$DROVER" queue >/dev/null || fail "the server stopped answering after the bodies"
echo "PASS"
