// Tries every way out of the page it can think of, towards a server the test runs on
// 127.0.0.1:__PORT__ (the test substitutes the port), then paints normally.
// Every attempt is wrapped: the verdict must come from the painting, and the server
// must see nothing at all.
const PORT = __PORT__;
const TARGETS = [`http://127.0.0.1:${PORT}`, `http://localhost:${PORT}`];
const attempts = [];

function attempt(name, fn) {
  try {
    const r = fn();
    if (r && typeof r.then === "function") r.then(() => attempts.push(name + ":ok"), () => attempts.push(name + ":refused"));
  } catch (e) {
    attempts.push(name + ":threw");
  }
}

function tryEverything(base) {
  attempt("fetch", () => fetch(`${base}/fetch`, { mode: "no-cors" }));
  attempt("xhr", () => { const x = new XMLHttpRequest(); x.open("GET", `${base}/xhr`); x.send(); });
  attempt("websocket", () => new WebSocket(base.replace("http", "ws") + "/ws"));
  attempt("eventsource", () => new EventSource(`${base}/sse`));
  attempt("image", () => { const i = new Image(); i.src = `${base}/img.png`; });
  attempt("beacon", () => navigator.sendBeacon(`${base}/beacon`, "x"));
  attempt("iframe", () => { const f = document.createElement("iframe"); f.src = `${base}/frame`; document.body.appendChild(f); });
  attempt("open", () => window.open(`${base}/popup`));
  attempt("import", () => import(`${base}/module.js`));
  attempt("worker", () => new Worker(`${base}/worker.js`));
  attempt("blob-worker", () => new Worker(URL.createObjectURL(new Blob([`fetch("${base}/from-worker")`]))));
  attempt("data-worker", () => new Worker(`data:text/javascript,fetch("${base}/from-data-worker")`));
  attempt("shared-worker", () => new SharedWorker(`${base}/shared.js`));
  attempt("service-worker", () => navigator.serviceWorker.register(`${base}/sw.js`));
  attempt("script", () => { const s = document.createElement("script"); s.src = `${base}/script.js`; document.head.appendChild(s); });
  attempt("stylesheet", () => { const l = document.createElement("link"); l.rel = "stylesheet"; l.href = `${base}/style.css`; document.head.appendChild(l); });
  for (const rel of ["preconnect", "prefetch", "preload", "dns-prefetch", "prerender"]) {
    attempt(rel, () => { const l = document.createElement("link"); l.rel = rel; l.href = `${base}/${rel}`; l.as = "script"; document.head.appendChild(l); });
  }
  attempt("css-url", () => { document.body.style.backgroundImage = `url(${base}/bg.png)`; });
  attempt("style-import", () => { const st = document.createElement("style"); st.textContent = `@import url("${base}/import.css");`; document.head.appendChild(st); });
  attempt("font", () => new FontFace("x", `url(${base}/font.woff2)`).load());
  attempt("audio", () => { const a = new Audio(`${base}/a.mp3`); return a.play(); });
  attempt("video", () => { const v = document.createElement("video"); v.src = `${base}/v.mp4`; document.body.appendChild(v); });
  attempt("object", () => { const o = document.createElement("object"); o.data = `${base}/obj`; document.body.appendChild(o); });
  attempt("form", () => { const f = document.createElement("form"); f.action = `${base}/form`; f.method = "POST"; document.body.appendChild(f); f.submit(); });
  attempt("anchor-ping", () => { const a = document.createElement("a"); a.href = "#x"; a.ping = `${base}/ping`; document.body.appendChild(a); a.click(); });
  attempt("meta-refresh", () => { const m = document.createElement("meta"); m.httpEquiv = "refresh"; m.content = `0;url=${base}/refresh`; document.head.appendChild(m); });
  attempt("webrtc", () => {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: `stun:127.0.0.1:${PORT}` }, { urls: `turn:127.0.0.1:${PORT}?transport=tcp`, username: "u", credential: "c" }] });
    pc.createDataChannel("x");
    return pc.createOffer().then((o) => pc.setLocalDescription(o));
  });
}

async function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  for (const base of TARGETS) tryEverything(base);
  attempt("location", () => { location.href = `${TARGETS[0]}/navigate`; });
  // Give asynchronous attempts time to happen before painting.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#5f8f4e", 170);
  brush.circle(300, 300, 140, 0.2);
}
