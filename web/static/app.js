// db-advisor pages: the little behaviour they have. Everything works without it, but for the live run page.
"use strict";

// Ask before a form that changes production (data-confirm on the button or on the form).
document.addEventListener("submit", function (event) {
  var button = event.submitter;
  var message = (button && button.dataset.confirm) || event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

// Run and schedule forms: show only the fields and optimizers of the chosen kind.
document.querySelectorAll("[data-run-form]").forEach(function (form) {
  var kind = form.querySelector("[data-kind-select]");
  var optimizer = form.querySelector("[data-optimizer]");
  if (!kind || !optimizer) return;
  var defaults = {};  // the server's (the kind registry's), named by the form
  try { defaults = JSON.parse(form.dataset.defaultOptimizers || "null") || defaults; } catch (e) { /* keep these */ }
  function sync() {
    var k = kind.value;
    form.querySelectorAll("[data-for-kind]").forEach(function (el) {
      el.hidden = el.dataset.forKind.split(" ").indexOf(k) < 0;
      el.querySelectorAll("input, select").forEach(function (i) { i.disabled = el.hidden; });
    });
    optimizer.querySelectorAll("optgroup").forEach(function (group) {
      var off = group.dataset.kind !== k;
      group.hidden = off;
      group.disabled = off;
    });
    var chosen = optimizer.selectedOptions[0];
    if (chosen && chosen.parentElement.tagName === "OPTGROUP" && chosen.parentElement.disabled) optimizer.value = "";
    optimizer.options[0].textContent = defaults[k] ? "default (" + defaults[k] + ")" : "default";
  }
  kind.addEventListener("change", sync);
  sync();
});

// Logs show their latest lines.
document.querySelectorAll("pre.log").forEach(function (pre) { pre.scrollTop = pre.scrollHeight; });

// A queued or running run: poll its progress, show the latest message, reload when its state or its number of
// trials changes (the server also asks browsers without JavaScript to refresh every 3 s).
(function () {
  var box = document.querySelector("[data-poll]");
  if (!box) return;
  var state = box.dataset.state, trials = box.dataset.trials;
  function tick() {
    fetch(box.dataset.poll, { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) {
        var type = r.headers.get("content-type") || "";
        if (r.ok && type.indexOf("json") < 0) { location.reload(); return undefined; }  // logged out meanwhile
        return r.ok ? r.json() : null;
      })
      .then(function (p) {
        if (p === undefined) return;
        if (p === null) { setTimeout(tick, 3000); return; }
        if (p.state !== state || String(p.trials_done) !== trials) { location.reload(); return; }
        var line = document.getElementById("progress");
        if (line && p.message) line.textContent = p.message;
        setTimeout(tick, 1500);
      })
      .catch(function () { setTimeout(tick, 3000); });  // the server may be restarting
  }
  setTimeout(tick, 1500);
})();
