# Frame rate of the showcase with and without a client calling an unbounded
# world.query in a loop (demo/README.md, "The inspector at 100,000 entities").
# Start the showcase first:
#   cargo run --release -p mosaic-demo -- --inspect 127.0.0.1:17711 --no-render --entities 100000 --frames 10000000
# then: python3 demo/scripts/inspector_fps.py
import json, time, threading, urllib.request, sys
URL="http://127.0.0.1:17711/"
H={"Content-Type":"application/json"}
def call(method, params=None):
    body={"jsonrpc":"2.0","id":1,"method":method}
    if params is not None: body["params"]=params
    req=urllib.request.Request(URL, data=json.dumps(body).encode(), headers=H)
    with urllib.request.urlopen(req, timeout=120) as r: return r.read()
def frames(): return json.loads(call("world.overview"))["result"]["frames"]
stop=threading.Event(); active=threading.Event(); answers=[0]
def client():
    while not stop.is_set():
        if active.is_set():
            b=call("world.query",{"data":{"option":"all"},"limit":1000000000}); answers[0]+=1
        else: time.sleep(0.05)
threading.Thread(target=client,daemon=True).start()
W=15; res={"off":[],"on":[]}
for rnd in range(3):
    for mode in ("off","on"):
        if mode=="on": active.set()
        else: active.clear(); time.sleep(3)  # let an answer in flight finish
        f0=frames(); t0=time.time(); time.sleep(W); f1=frames(); t1=time.time()
        res[mode].append((f1-f0)/(t1-t0)); print(mode, round(res[mode][-1],2), flush=True)
active.clear(); stop.set()
import statistics as st
print("median off", st.median(res["off"]), "on", st.median(res["on"]), "answers", answers[0])
