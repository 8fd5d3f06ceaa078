// The Files tab's uploads (docs/dashboard.md "Files"): files dropped on the drop zone or chosen in
// the picker are sent one after the other to the public upload route,
// POST /api/pods/{name}/files/upload (multipart `path` then `file`), with XMLHttpRequest so the
// progress bar follows the bytes sent. When all are in, the page reloads to list them.

function setup(section) {
  const url = section.dataset.upload;
  const dir = section.dataset.dir;
  const zone = section.querySelector("[data-drop-zone]");
  const input = section.querySelector("[data-upload-input]");
  const box = section.querySelector("[data-upload-progress]");
  const bar = section.querySelector("[data-upload-bar]");
  const label = section.querySelector("[data-upload-label]");
  const status = section.querySelector("[data-upload-status]");
  const error = section.querySelector("[data-upload-error]");
  let busy = false;

  function showError(text) {
    error.textContent = text;
    error.hidden = !text;
  }

  function sendOne(file, index, count) {
    return new Promise((resolve, reject) => {
      const form = new FormData();
      form.append("path", dir);
      form.append("file", file, file.name);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.withCredentials = true;
      label.textContent = `Uploading ${file.name} (${index + 1} of ${count})`;
      bar.value = 0;
      xhr.upload.addEventListener("progress", (event) => {
        if (!event.lengthComputable) return;
        const percent = Math.floor((event.loaded / event.total) * 100);
        bar.value = percent;
        status.textContent = `${file.name}: ${percent} %`;
      });
      xhr.addEventListener("load", () => {
        if (xhr.status >= 200 && xhr.status < 300) {
          bar.value = 100;
          status.textContent = `${file.name}: 100 %, uploaded`;
          resolve();
          return;
        }
        let reason = xhr.statusText;
        try {
          reason = JSON.parse(xhr.responseText).error || reason;
        } catch {
          reason = xhr.responseText.slice(0, 300) || reason;
        }
        reject(new Error(`${file.name}: ${reason} (HTTP ${xhr.status})`));
      });
      xhr.addEventListener("error", () => reject(new Error(`${file.name}: the upload did not complete`)));
      xhr.addEventListener("abort", () => reject(new Error(`${file.name}: the upload was cancelled`)));
      xhr.send(form);
    });
  }

  async function upload(files) {
    if (busy || files.length === 0) return;
    busy = true;
    showError("");
    box.hidden = false;
    input.disabled = true;
    section.setAttribute("aria-busy", "true");
    try {
      for (let i = 0; i < files.length; i++) await sendOne(files[i], i, files.length);
      label.textContent = files.length === 1 ? "Uploaded" : `Uploaded ${files.length} files`;
      section.dataset.uploaded = String(files.length);
      setTimeout(() => window.location.reload(), 600);
    } catch (err) {
      showError(err.message);
    } finally {
      busy = false;
      input.disabled = false;
      input.value = "";
      section.removeAttribute("aria-busy");
    }
  }

  input.addEventListener("change", () => void upload([...input.files]));
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    void upload([...(event.dataTransfer?.files ?? [])]);
  });
}

for (const section of document.querySelectorAll("[data-upload]")) setup(section);
