"""Raw SDL wire helpers for attack measurements (scripts/hostile-peers)."""
import json, socket, struct, time, os

SVC_CONTROL, SVC_RPC, SVC_AUDIO, SVC_VIDEO = 0, 7, 10, 11

def bson_doc(items):
    body = b''
    for k, v in items:
        kb = k.encode() + b'\0'
        if isinstance(v, bool):
            body += b'\x08' + kb + (b'\x01' if v else b'\x00')
        elif isinstance(v, int):
            body += b'\x10' + kb + struct.pack('<i', v)
        elif isinstance(v, str):
            vb = v.encode() + b'\0'
            body += b'\x02' + kb + struct.pack('<i', len(vb)) + vb
    return struct.pack('<i', len(body) + 5) + body + b'\0'

def frame(version, ftype, service, info, session, payload=b'', msgid=0, e=0):
    hdr = bytes([(version << 4) | (e << 3) | ftype, service, info, session]) + struct.pack('>I', len(payload))
    if version >= 2:
        hdr += struct.pack('>I', msgid)
    return hdr + payload

def rpc_payload(rtype, fid, corr, params):
    js = json.dumps(params, separators=(',', ':')).encode() if not isinstance(params, bytes) else params
    return bytes([(rtype << 4) | ((fid >> 24) & 0x0F)]) + struct.pack('>I', fid)[1:] + struct.pack('>II', corr, len(js)) + js

def rpc_frame(session, rtype, fid, corr, params, msgid=1):
    return frame(5, 1, SVC_RPC, 0, session, rpc_payload(rtype, fid, corr, params), msgid)

def register_params(name, app_id, hmi_types=None):
    p = {"syncMsgVersion": {"majorVersion": 8, "minorVersion": 0}, "appName": name, "isMediaApplication": False,
         "languageDesired": "EN-US", "hmiDisplayLanguageDesired": "EN-US", "appID": app_id, "fullAppID": app_id}
    if hmi_types:
        p["appHMIType"] = hmi_types
    return p

def read_exact(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError('closed')
        data += chunk
    return data

def read_frame(sock):
    h = read_exact(sock, 8)
    version = h[0] >> 4
    size = struct.unpack('>I', h[4:8])[0]
    if version >= 2:
        read_exact(sock, 4)
    payload = read_exact(sock, size) if size else b''
    return {'version': version, 'ftype': h[0] & 7, 'service': h[1], 'info': h[2], 'session': h[3], 'payload': payload}

def rpc_of(fr):
    p = fr['payload']
    rtype = p[0] >> 4
    fid = struct.unpack('>I', bytes([p[0] & 0x0F]) + p[1:4])[0]
    corr, size = struct.unpack('>II', p[4:12])
    try:
        params = json.loads(p[12:12 + size]) if size else {}
    except Exception:
        params = None
    return rtype, fid, corr, params

def connect(port, rcvbuf=None, host='127.0.0.1'):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def start_session(sock):
    sock.sendall(frame(5, 0, SVC_RPC, 1, 0, bson_doc([("protocolVersion", "5.4.0")])))
    while True:
        fr = read_frame(sock)
        if fr['ftype'] == 0 and fr['service'] == SVC_RPC and fr['info'] in (2, 3):
            if fr['info'] != 2:
                raise RuntimeError('StartService NAK')
            return fr['session']

def register(sock, session, name, app_id, hmi_types=None, wait_full=False):
    sock.sendall(rpc_frame(session, 0, 1, 1, register_params(name, app_id, hmi_types)))
    registered = False
    while True:
        fr = read_frame(sock)
        if fr['service'] != SVC_RPC or fr['ftype'] != 1:
            continue
        rtype, fid, corr, params = rpc_of(fr)
        if fid == 1 and rtype == 1:
            if not params or not params.get('success'):
                raise RuntimeError(f'register refused: {params}')
            registered = True
            if not wait_full:
                return
        if fid == 32768 and registered and wait_full and params and params.get('hmiLevel') == 'FULL':
            return

def registered_app(port, name, app_id, rcvbuf=None, hmi_types=None, wait_full=False):
    s = connect(port, rcvbuf)
    session = start_session(s)
    register(s, session, name, app_id, hmi_types, wait_full)
    return s, session

def rss_kib(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0

def cpu_ticks(pid):
    s = open(f'/proc/{pid}/stat').read()
    f = s[s.rindex(')') + 2:].split()
    return int(f[11]) + int(f[12])
