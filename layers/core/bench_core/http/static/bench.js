// Bench pages work without this file; it adds the theme switch, copy buttons and the run
// explorer's moves (rows and details put in place, search, keyboard).
// Loaded in <head> so a chosen theme applies before the first paint.
(function () {
  "use strict";
  var KEY = "bench-theme";
  var root = document.documentElement;

  function stored() {
    try { return localStorage.getItem(KEY); } catch (e) { return null; }
  }
  function apply(theme) {
    if (theme === "light" || theme === "dark") { root.setAttribute("data-theme", theme); }
    else { root.removeAttribute("data-theme"); }
  }
  function current() {
    var chosen = root.getAttribute("data-theme");
    if (chosen) { return chosen; }
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  apply(stored());

  function setUpToggle(button) {
    function label() {
      var next = current() === "dark" ? "light" : "dark";
      button.textContent = next === "dark" ? "Dark" : "Light";
      button.setAttribute("aria-label", "Switch to the " + next + " theme");
    }
    button.hidden = false;
    label();
    button.addEventListener("click", function () {
      var next = current() === "dark" ? "light" : "dark";
      apply(next);
      try { localStorage.setItem(KEY, next); } catch (e) { /* private mode: session only */ }
      label();
    });
  }

  function setUpCopy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = target.textContent;
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      };
      var select = function () {
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Press Ctrl+C";
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, select);
      } else {
        select();
      }
    });
  }


  // ---- the run explorer: every link works without this; here they answer in place ----------

  function fragment(url) {
    var there = new URL(url, window.location.href);
    return fetch(there.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (answer) {
        if (!answer.ok) { throw new Error("HTTP " + answer.status); }
        return answer.text();
      })
      .then(function (html) {
        var holder = document.createElement("template");
        holder.innerHTML = html;
        return holder.content;
      });
  }

  function setUpExplorer(explorer) {
    var search = explorer.querySelector("[data-span-search]");
    var state = explorer.querySelector("[data-search-state]");
    function spans() {  // looked up each time: a run in progress redraws its rows
      return explorer.querySelector("[data-run-spans]");
    }
    if (!spans()) { return; }

    function rows() {
      return Array.prototype.slice.call(spans().querySelectorAll("li.span-row[data-span]"));
    }
    function shown() {
      return rows().filter(function (li) { return !li.hidden; });
    }
    function depth(li) { return parseInt(li.getAttribute("data-depth") || "0", 10); }
    function current() {
      var active = document.activeElement && document.activeElement.closest
        ? document.activeElement.closest("li.span-row[data-span]") : null;
      return active && spans().contains(active) ? active : spans().querySelector("li.span-row.selected[data-span]");
    }
    function below(li) {  // the rows drawn under `li`, in order
      var out = [], top = depth(li);
      for (var next = li.nextElementSibling; next && depth(next) > top; next = next.nextElementSibling) {
        out.push(next);
      }
      return out;
    }
    function fold(li, folded) {
      if (folded) { li.setAttribute("data-folded", ""); } else { li.removeAttribute("data-folded"); }
      var skipUnder = null;
      below(li).forEach(function (row) {
        if (folded) { row.hidden = true; return; }
        if (skipUnder !== null && depth(row) > skipUnder) { return; }
        skipUnder = null;
        row.hidden = false;
        if (row.hasAttribute("data-folded")) { skipUnder = depth(row); }
      });
    }
    function go(li) {
      if (!li) { return; }
      var link = li.querySelector("a.span-name");
      if (link) { link.focus(); link.scrollIntoView({ block: "nearest" }); }
    }
    function select(li, url) {
      var link = li.querySelector("a.span-name");
      var there = new URL(url || link.href, window.location.href);
      there.searchParams.set("part", "detail");
      there.hash = "";
      return fragment(there.toString()).then(function (detail) {
        Array.prototype.forEach.call(explorer.querySelectorAll(".span-detail"), function (old) {
          var box = old.parentNode;
          old.remove();
          if (box && !box.hasAttribute("data-span") && box.classList.contains("span-row")) { box.remove(); }
        });
        Array.prototype.forEach.call(spans().querySelectorAll("li.selected"), function (was) {
          was.classList.remove("selected");
          var a = was.querySelector("a.span-name");
          if (a) { a.removeAttribute("aria-current"); }
        });
        li.classList.add("selected");
        link.setAttribute("aria-current", "true");
        li.appendChild(detail);
        var address = new URL(link.href, window.location.href);
        address.searchParams.delete("part");
        window.history.pushState(null, "", address.toString());
        go(li);
      });
    }
    function nextError(step) {
      var all = shown();
      var here = all.indexOf(current());
      for (var i = here + step; i >= 0 && i < all.length; i += step) {
        if (all[i].getAttribute("data-status") === "failed") { return select(all[i]); }
      }
      var link = explorer.querySelector(step > 0 ? "[data-error-next]" : "[data-error-previous]");
      if (link) { link.click(); }
      return null;
    }

    explorer.addEventListener("click", function (event) {
      if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) { return; }
      var more = event.target.closest("a[data-rows]");
      if (more) {
        event.preventDefault();
        var row = more.closest("li");
        more.setAttribute("aria-busy", "true");
        fragment(more.getAttribute("data-rows")).then(function (rowsFound) {
          row.replaceWith(rowsFound);
          filter();
        }, function () { window.location.href = more.href; });
        return;
      }
      var name = event.target.closest("a.span-name");
      if (name) {
        event.preventDefault();
        select(name.closest("li"), name.href).catch(function () { window.location.href = name.href; });
      }
    });
    Array.prototype.forEach.call(explorer.querySelectorAll("[data-error-next], [data-error-previous]"), function (link) {
      link.addEventListener("click", function (event) {
        var id = new URL(link.href, window.location.href).searchParams.get("span");
        var target = id && document.getElementById("span-" + id);
        if (target && spans().contains(target) && !target.hidden) {
          event.preventDefault();
          select(target).catch(function () { window.location.href = link.href; });
        }
      });
    });

    function filter() {  // by name, as one types; a search the server answered stays as it is
      if (!search || search.value === search.defaultValue && search.defaultValue !== "") { return; }
      var needle = search.value.trim().toLowerCase();
      var all = rows();
      var keep = {};
      var matched = 0;
      if (needle) {
        var byId = {};
        all.forEach(function (li) { byId[li.getAttribute("data-span")] = li; });
        all.forEach(function (li) {
          if ((li.getAttribute("data-name") || "").toLowerCase().indexOf(needle) === -1) { return; }
          matched += 1;
          for (var up = li; up && !keep[up.getAttribute("data-span")]; up = byId[up.getAttribute("data-parent")]) {
            keep[up.getAttribute("data-span")] = up === li ? "match" : "context";
          }
        });
      }
      Array.prototype.forEach.call(spans().children, function (li) {
        var id = li.getAttribute("data-span");
        li.hidden = needle ? !(id && keep[id]) : false;
        li.classList.toggle("match", !!(needle && id && keep[id] === "match"));
      });
      if (!needle) { rows().filter(function (li) { return li.hasAttribute("data-folded"); }).forEach(function (li) { fold(li, true); }); }
      if (state) {
        state.textContent = needle ? matched + " of " + all.length + " drawn spans match by name" +
          " (Enter searches their content too)" : "";
      }
    }
    if (search) {
      search.addEventListener("input", filter);
      search.addEventListener("keydown", function (event) {
        if (event.key === "Escape") { search.value = ""; filter(); search.blur(); }
        if (event.key === "ArrowDown") {
          event.preventDefault();
          go(shown().filter(function (li) { return li.classList.contains("match"); })[0] || shown()[0]);
        }
      });
    }

    document.addEventListener("keydown", function (event) {
      var typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
      if (typing || event.altKey || event.ctrlKey || event.metaKey) { return; }
      var all = shown();
      var here = current();
      var at = all.indexOf(here);
      switch (event.key) {
        case "/":
          if (search) { event.preventDefault(); search.focus(); }
          return;
        case "j": case "ArrowDown":
          event.preventDefault(); go(all[Math.min(at + 1, all.length - 1)] || all[0]); return;
        case "k": case "ArrowUp":
          event.preventDefault(); go(all[Math.max(at - 1, 0)] || all[0]); return;
        case "ArrowLeft": case "h":
          if (!here) { return; }
          event.preventDefault();
          if (below(here).length && !here.hasAttribute("data-folded")) { fold(here, true); }
          else { go(document.getElementById("span-" + here.getAttribute("data-parent"))); }
          return;
        case "ArrowRight": case "l":
          if (!here) { return; }
          event.preventDefault();
          if (here.hasAttribute("data-folded")) { fold(here, false); }
          else { go(all[at + 1] && depth(all[at + 1]) > depth(here) ? all[at + 1] : here); }
          return;
        case "Enter":
          if (here && !event.target.closest("a[data-rows]")) { event.preventDefault(); select(here); }
          return;
        case "e":
          event.preventDefault(); nextError(1); return;
        case "E":
          event.preventDefault(); nextError(-1); return;
        default:
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.querySelector("[data-theme-toggle]");
    if (toggle) { setUpToggle(toggle); }
    Array.prototype.forEach.call(document.querySelectorAll("[data-copy]"), setUpCopy);
    Array.prototype.forEach.call(document.querySelectorAll("[data-run-explorer]"), setUpExplorer);
  });
}());
