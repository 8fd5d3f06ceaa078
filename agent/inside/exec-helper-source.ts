/**
 * The source of the pod's command helper, run as `python3 -I -S -c` (./exec-helper.ts says why and
 * how). Python because every pod image has it (images/base/packages) and its stdlib has what the
 * helper needs (a select loop, fork and exec with the workdir changed in the child); `-I -S`: no
 * PYTHON* variable, user site or current directory of the pod's can change what it imports.
 */
export const EXEC_HELPER_SOURCE = String.raw`import base64, json, os, selectors, signal, subprocess, sys, time

# The pod's command helper (see exec-helper.ts): started once by runc exec as pod_user, it runs
# each command the agent sends on fd 3 as a child, under timeout, and reports its output and
# exit status on fd 4, one JSON object a line. Argv and workdir arrive as base64 of their bytes and
# go to the kernel as they are: nothing here is ever parsed by a shell.
TIMEOUT = b"/usr/bin/timeout"
KILL_AFTER = b"5"
GRACE_S = 2.0
CHUNK = 65536
REQ, RES = 3, 4

sel = selectors.DefaultSelector()
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.signal(signal.SIGCHLD, lambda *_: None)
signal.set_wakeup_fd(wake_w)


def send(msg):
    data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
    while data:
        data = data[os.write(RES, data):]


cmds = {}


def start(req):
    i = req["id"]
    cwd = base64.b64decode(req["cwd"])
    argv = [TIMEOUT, b"-k", KILL_AFTER, b"--", str(int(req["t"])).encode()]
    argv += [base64.b64decode(a) for a in req["argv"]]
    try:
        p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, close_fds=True)
    except OSError as e:
        send({"id": i, "x": None, "cwd": e.filename == cwd, "msg": str(e)[:200]})
        return
    c = {"p": p, "cap": int(req["cap"]), "n": [0, 0], "om": [0, 0], "open": 2, "exit": None, "until": None}
    cmds[i] = c
    for k, f in ((0, p.stdout), (1, p.stderr)):
        os.set_blocking(f.fileno(), False)
        sel.register(f, selectors.EVENT_READ, (i, k))


def finish(i):
    c = cmds.pop(i)
    for f in (c["p"].stdout, c["p"].stderr):
        if not f.closed:
            sel.unregister(f)
            f.close()
    send({"id": i, "x": c["exit"], "om": c["om"]})


def settle(i, now):
    c = cmds.get(i)
    if c and c["exit"] is not None and (c["open"] == 0 or now >= c["until"]):
        finish(i)


def output(i, k, f):
    c = cmds[i]
    try:
        data = os.read(f.fileno(), CHUNK)
    except BlockingIOError:
        return
    if not data:
        sel.unregister(f)
        f.close()
        c["open"] -= 1
        settle(i, time.monotonic())
        return
    room = max(0, c["cap"] - c["n"][k])
    kept = data[:room]
    c["om"][k] += len(data) - len(kept)
    if kept:
        c["n"][k] += len(kept)
        send({"id": i, "oe"[k]: base64.b64encode(kept).decode()})


def reap():
    now = time.monotonic()
    for i, c in list(cmds.items()):
        if c["exit"] is None:
            rc = c["p"].poll()
            if rc is None:
                continue
            c["exit"] = rc if rc >= 0 else 128 - rc
            c["until"] = now + GRACE_S
        settle(i, now)


def kill(i):
    c = cmds.get(i)
    if c and c["exit"] is None:
        try:
            os.killpg(c["p"].pid, signal.SIGKILL)
        except OSError:
            c["p"].kill()


def main():
    os.set_blocking(REQ, False)
    sel.register(REQ, selectors.EVENT_READ, "req")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    send({"ready": 1})
    buf, closing = b"", False
    while not (closing and not cmds):
        deadlines = [c["until"] for c in cmds.values() if c["until"] is not None]
        wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        for key, _ in sel.select(wait):
            if key.data == "wake":
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                reap()
            elif key.data == "req":
                try:
                    data = os.read(REQ, CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(REQ)
                    closing = True
                    continue
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    req = json.loads(line)
                    if "k" in req:
                        kill(req["k"])
                    else:
                        start(req)
            elif key.data[0] in cmds:
                output(key.data[0], key.data[1], key.fileobj)
        reap()


try:
    main()
except BrokenPipeError:
    pass
`;
