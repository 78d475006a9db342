// Drag and drop onto the upload form, a list of what was chosen, and upload progress.
(() => {
  "use strict";
  const zone = document.getElementById("dropzone");
  const input = document.getElementById("files");
  const chosen = document.getElementById("chosen");
  const progress = document.getElementById("upload-progress");
  if (!zone || !input) return;

  const describe = () => {
    const files = [...input.files];
    const mb = files.reduce((sum, f) => sum + f.size, 0) / 2 ** 20;
    chosen.textContent = files.length ? `${files.length} file${files.length === 1 ? "" : "s"} · ${mb.toFixed(1)} MB` : "";
  };
  input.addEventListener("change", describe);
  for (const type of ["dragenter", "dragover"]) {
    zone.addEventListener(type, (event) => { event.preventDefault(); zone.classList.add("over"); });
  }
  for (const type of ["dragleave", "drop"]) {
    zone.addEventListener(type, () => zone.classList.remove("over"));
  }
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    const transfer = new DataTransfer();
    for (const file of [...input.files, ...event.dataTransfer.files]) transfer.items.add(file);
    input.files = transfer.files;
    describe();
  });
  document.body.addEventListener("htmx:xhr:progress", (event) => {
    if (!event.detail.lengthComputable) return;
    progress.hidden = false;
    progress.value = Math.round((event.detail.loaded / event.detail.total) * 100);
  });
  document.body.addEventListener("htmx:afterRequest", () => { progress.hidden = true; });
})();
