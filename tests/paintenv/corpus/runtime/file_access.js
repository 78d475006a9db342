// Tries to read the host's files. If any attempt succeeded, it would draw a bare
// rect (a runtime_bare_primitive verdict the test would see).
function leaked() {
  window["re" + "ct"](0, 0, 10, 10);
}
async function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf7ef");
  const tries = [
    () => fetch("file:///etc/hostname").then((r) => r.text()).then(leaked),
    () => new Promise((ok, no) => {
      const x = new XMLHttpRequest();
      x.open("GET", "file:///etc/hostname");
      x.onload = () => { leaked(); ok(); };
      x.onerror = no;
      x.send();
    }),
    () => new Promise((ok, no) => {
      const i = new Image();
      i.onload = () => { leaked(); ok(); };
      i.onerror = no;
      i.src = "file:///usr/share/pixmaps/debian-logo.png";
    }),
    () => import("file:///etc/hostname").then(leaked),
  ];
  for (const t of tries) {
    try { await t(); } catch (e) { /* refused, as it should be */ }
  }
  try { location.href = "file:///etc/hostname"; } catch (e) {}
  await new Promise((r) => setTimeout(r, 300));
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#5f8f4e", 170);
  brush.circle(300, 300, 140, 0.2);
}
