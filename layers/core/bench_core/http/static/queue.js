// The annotation queue (/dashboard/agents/{slug}/queue): one keystroke a verdict. j/k move,
// y/n send a thumbs up/down to the run's feedback route (the page's CSRF token, a feedback id
// per run so a retry keeps one), s skips; each verdict moves to the next run. 0-9 choose the
// label the next verdicts carry, from the agent's label set.
(function () {
  "use strict";
  function start() {
    var list = document.querySelector("[data-queue]");
    if (!list) return;
    var items = Array.prototype.slice.call(list.querySelectorAll("[data-queue-item]"));
    var at = 0;
    var ids = {};
    var label = document.querySelector("[data-queue-label]");

    function select(i) {
      if (i >= items.length) {
        items.forEach(function (item) { item.removeAttribute("aria-current"); });
        var done = document.querySelector("[data-queue-done]");
        if (done) done.hidden = false;
        at = items.length;
        return;
      }
      at = Math.max(0, i);
      items.forEach(function (item, n) {
        if (n === at) item.setAttribute("aria-current", "true");
        else item.removeAttribute("aria-current");
      });
      items[at].focus({ preventScroll: true });
      items[at].scrollIntoView({ block: "nearest" });
    }

    function feedbackId(item) {
      var run = item.getAttribute("data-run");
      if (!ids[run]) ids[run] = "queue-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
      return ids[run];
    }

    function verdict(item, thumbs) {
      var shown = item.querySelector("[data-queue-verdict]");
      shown.textContent = "saving…";
      fetch(item.getAttribute("data-feedback-url"), {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": list.getAttribute("data-csrf") },
        body: JSON.stringify(label && label.value
          ? { feedback_id: feedbackId(item), thumbs: thumbs, label: label.value }
          : { feedback_id: feedbackId(item), thumbs: thumbs })
      }).then(function (response) {
        // read the answer whole: a body left unread is cut off when the page is left
        return response.text().then(function () {
          if (!response.ok) throw new Error("HTTP " + response.status);
        });
      }).then(function () {
        shown.textContent = thumbs === "up" ? "thumbs up saved" : "thumbs down saved";
        item.setAttribute("data-queue-saved", thumbs);
      }).catch(function (error) {
        shown.textContent = "not saved (" + error.message + "): press y or n again";
        item.removeAttribute("data-queue-saved");
      });
    }

    function act(item, what) {
      var i = items.indexOf(item);
      if (what === "up" || what === "down") verdict(item, what);
      else item.setAttribute("data-queue-skipped", "true");
      select(i + 1);
    }

    list.addEventListener("click", function (event) {
      var button = event.target.closest("button");
      if (!button) return;
      var item = button.closest("[data-queue-item]");
      act(item, button.getAttribute("data-queue-thumbs") || "skip");
    });

    document.addEventListener("keydown", function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      var target = event.target;
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) return;
      var item = items[at];
      switch (event.key) {
        case "j": select(Math.min(at + 1, items.length - 1)); break;
        case "k": select(at - 1); break;
        case "y": if (item) act(item, "up"); break;
        case "n": if (item) act(item, "down"); break;
        case "s": if (item) act(item, "skip"); break;
        case "o": if (item) window.location.href = item.querySelector("[data-queue-open]").href; break;
        default:
          if (!label || !/^[0-9]$/.test(event.key) || Number(event.key) >= label.options.length) return;
          label.selectedIndex = Number(event.key);
      }
      event.preventDefault();
    });
    select(0);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
