// The Memory page's delete. It posts with fetch, which sends this page's origin (a plain form
// post under the view's no-referrer policy sends "Origin: null", which writes refuse), then
// shows the list again with what was done.
for (const form of document.querySelectorAll("form[data-memory-delete]")) {
  form.addEventListener("submit", async (submit) => {
    submit.preventDefault();
    const response = await fetch(form.action, {
      method: "POST",
      headers: { accept: "application/json" },
      body: new FormData(form),
    });
    let data = {};
    try { data = await response.json(); } catch { /* no body */ }
    const notice = data.notice || `Not deleted: the server answered ${response.status}`;
    location.assign(`/memory?notice=${encodeURIComponent(notice)}`);
  });
}
