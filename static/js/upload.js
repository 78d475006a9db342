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

  // htmx leaves 4xx/5xx answers unswapped by default, which hid the server's message (no file
  // chosen, too big, nothing importable). Our report fragment is swapped in whatever its
  // status; any other error page becomes a one-line message in the report's place.
  const showError = (text) => {
    const section = document.createElement("section");
    section.id = "report";
    section.dataset.status = "error";
    const message = document.createElement("p");
    message.className = "error card";
    message.id = "upload-error";
    message.setAttribute("role", "alert");
    message.textContent = text;
    section.append(message);
    document.getElementById("report").replaceWith(section);
  };
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const xhr = event.detail.xhr;
    if (event.detail.target.id !== "report" || xhr.status < 400) return;
    if (/^\s*<section id="report"/.test(xhr.responseText)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    } else {
      event.detail.shouldSwap = false;
      const plain = (xhr.getResponseHeader("Content-Type") || "").startsWith("text/plain");
      const detail = plain ? `: ${xhr.responseText.slice(0, 300)}` : ` (${xhr.statusText || "error"})`;
      showError(`The upload failed: the server answered ${xhr.status}${detail}`);
    }
  });
  document.body.addEventListener("htmx:sendError", (event) => {
    if (event.detail.elt.id === "upload-form") showError("The upload failed: the server could not be reached.");
  });
})();
