// Live dashboard pages: one WebSocket per page (the feed named by [data-live]), reconnecting
// with backoff after a drop and saying so; task events grow a tree of runs ([data-live-runs]:
// each run at the top, its subtasks under their parents as they start and end, each linking
// to its run page), other events go to the top of the flat feed, and the numbers (already
// formatted by the server) replace the old ones. A run page of a run in progress
// ([data-live-run]) reloads its tree when one of its spans changes; a session's page
// ([data-live-session]) reloads its turns when a run begun in the session ends. The /try page's demo
// button sends its runs one by one so they arrive live. Text only goes in through textContent.
(function () {
  "use strict";
  var MAX_ITEMS = 200;
  var PING_MS = 4 * 60 * 1000; // under API Gateway's 10-minute idle timeout
  var DEMO_GAP_MS = 700;

  function setState(el, state, text) {
    if (!el) { return; }
    el.setAttribute("data-state", state);
    el.textContent = text;
  }

  function item(e) {
    var li = document.createElement("li");
    li.className = "feed-item fresh";
    li.setAttribute("data-event", e.id);
    function part(tag, cls, text) {
      var node = document.createElement(tag);
      node.className = cls;
      node.textContent = text || "";
      li.appendChild(node);
      return node;
    }
    part("span", "dot " + (e.status || "")).setAttribute("aria-hidden", "true");
    part("span", "feed-kind mono", e.kind);
    part("span", "feed-name", e.name);
    part("span", "feed-meta", (e.duration_text || "") + (e.cost_text ? " · " + e.cost_text : ""));
    var time = part("time", "feed-time mono", (e.ts || "").slice(11, 19));
    time.setAttribute("datetime", e.ts || "");
    var value = e.output || e.input || e.data;
    if (value) { part("div", "feed-preview mono", value); }
    return li;
  }

  var MAX_RUNS = 50;
  var MAX_CHILDREN = 50;
  var RUN_REFRESH_MS = 1000;
  var FRESH_MS = 1500;

  function Runs(list) {
    this.list = list;
    this.nodes = {};
  }

  Runs.prototype.node = function (agent, id) {
    var key = agent + " " + id;
    if (this.nodes[key]) { return this.nodes[key]; }
    var li = document.createElement("li");
    li.className = "live-node";
    li.setAttribute("data-task", id);
    var line = document.createElement("div");
    line.className = "live-line";
    var dot = document.createElement("span");
    dot.className = "dot";
    dot.setAttribute("aria-hidden", "true");
    var link = document.createElement("a");
    link.href = "/u/" + agent + "/runs/" + encodeURIComponent(id);
    link.textContent = "…";
    var meta = document.createElement("span");
    meta.className = "meta";
    line.appendChild(dot);
    line.appendChild(link);
    line.appendChild(meta);
    var kids = document.createElement("ol");
    li.appendChild(line);
    li.appendChild(kids);
    var node = { li: li, dot: dot, link: link, meta: meta, kids: kids, parent: null, ended: false };
    this.nodes[key] = node;
    this.top(node);
    return node;
  };

  Runs.prototype.top = function (node) {
    this.list.insertBefore(node.li, this.list.firstChild);
    while (this.list.children.length > MAX_RUNS) { this.list.removeChild(this.list.lastChild); }
  };

  Runs.prototype.add = function (agent, e, live) {
    if (!e.task_id || (e.kind || "").indexOf("task.") !== 0 || !agent) { return false; }
    var node = this.node(agent, e.task_id);
    if (e.name) { node.link.textContent = e.name; }
    if (e.kind === "task.end") {
      node.ended = true;
      node.dot.className = "dot " + (e.status || "");
      node.li.className = "live-node " + (e.status || "");
      node.meta.textContent = e.duration_text || e.status || "";
    } else if (!node.ended) {
      node.li.className = "live-node running";
      node.meta.textContent = "running";
    }
    if (live) {
      node.li.classList.add("fresh");
      setTimeout(function () { node.li.classList.remove("fresh"); }, FRESH_MS);
    }
    if (e.parent_task_id && !node.parent) {
      node.parent = e.parent_task_id;
      var parent = this.node(agent, e.parent_task_id);
      if (parent.kids.children.length < MAX_CHILDREN) { parent.kids.appendChild(node.li); }
      else { node.li.remove(); parent.meta.textContent = "more subtasks than shown"; }
    }
    return true;
  };

  function refreshParts(selectors, then) {
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error("http " + r.status); } return r.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        selectors.forEach(function (selector) {
          var old = document.querySelector(selector);
          var now = fresh.querySelector(selector);
          if (old && now) { old.replaceWith(document.importNode(now, true)); }
        });
        if (then) { then(fresh); }
      })
      .catch(function () { /* the next change tries again */ });
  }

  function refreshRun(box) {
    refreshParts(["[data-run-head]", "[data-run-spans]"], function (fresh) {
      if (!fresh.querySelector("[data-live-run]")) { box.removeAttribute("data-live-run"); }
    });
  }

  function showNumbers(agent, numbers) {
    var shown = numbers && numbers.shown;
    if (!shown) { return false; }
    var found = false;
    Array.prototype.forEach.call(document.querySelectorAll("[data-agent]"), function (box) {
      if (box.getAttribute("data-agent") !== agent) { return; }
      found = true;
      Array.prototype.forEach.call(box.querySelectorAll("[data-stat]"), function (cell) {
        var value = shown[cell.getAttribute("data-stat")];
        if (value !== undefined) { cell.textContent = value; }
      });
    });
    return found;
  }

  function Feed(box) {
    this.box = box;
    this.channel = box.getAttribute("data-live");
    this.list = box.querySelector("[data-live-feed]");
    this.empty = box.querySelector("[data-live-empty]");
    this.state = box.querySelector("[data-live-state]") || document.querySelector("[data-live-state]");
    this.seen = {};
    this.retries = 0;
    var runsList = box.querySelector("[data-live-runs]");
    this.agent = this.channel && this.channel.indexOf("/") > 0 ? this.channel : null;
    this.runs = runsList ? new Runs(runsList) : null;
    this.runId = box.getAttribute("data-live-run");
    this.sessionId = box.getAttribute("data-live-session");
    this.sessionRuns = {};
    this.refreshing = null;
    var self = this;
    var initial = box.querySelector("[data-live-initial]");
    if (initial && this.runs) {
      var events = [];
      try { events = JSON.parse(initial.textContent); } catch (e) { events = []; }
      events.reverse().forEach(function (e) { self.seen[e.id] = true; self.runs.add(self.agent, e); });
      runsList.hidden = false;
      if (this.list) {
        Array.prototype.forEach.call(this.list.querySelectorAll("[data-task-event]"), function (li) { li.remove(); });
      }
    }
    if (this.list) {
      Array.prototype.forEach.call(this.list.children, function (li) { self.seen[li.getAttribute("data-event")] = true; });
    }
  }

  Feed.prototype.connect = function () {
    var self = this;
    setState(this.state, "connecting", this.retries ? "Reconnecting…" : "Connecting…");
    fetch("/live-token?channel=" + encodeURIComponent(this.channel), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (r.status === 404) { throw new Error("gone"); }
        if (!r.ok) { throw new Error("http " + r.status); }
        return r.json();
      })
      .then(function (answer) { self.open(answer.url); })
      .catch(function (err) {
        if (err.message === "gone") { setState(self.state, "closed", "Feed not available"); return; }
        self.later();
      });
  };

  Feed.prototype.open = function (url) {
    var self = this;
    var ws = new WebSocket(url);
    var ping = null;
    ws.onopen = function () {
      self.retries = 0;
      setState(self.state, "live", "Live");
      ping = setInterval(function () { ws.send('{"action":"ping"}'); }, PING_MS);
    };
    ws.onmessage = function (message) {
      var data;
      try { data = JSON.parse(message.data); } catch (e) { return; }
      self.receive(data);
    };
    ws.onclose = function (event) {
      clearInterval(ping);
      if (event.code === 1008) { setState(self.state, "closed", "Feed not available"); return; }
      self.later();
    };
  };

  Feed.prototype.later = function () {
    var self = this;
    var wait = Math.min(30, Math.pow(2, this.retries)) * (0.75 + Math.random() / 2);
    this.retries += 1;
    setState(this.state, "waiting", "Disconnected · retrying in " + Math.ceil(wait) + " s");
    setTimeout(function () { self.connect(); }, wait * 1000);
  };

  Feed.prototype.receive = function (data) {
    var self = this;
    if (data.type === "hello") {
      Object.keys(data.agents || {}).forEach(function (agent) { showNumbers(agent, data.agents[agent]); });
      return;
    }
    if (data.type !== "events") { return; }
    var fresh = (data.events || []).filter(function (e) { return !self.seen[e.id]; });
    fresh.forEach(function (e) { self.seen[e.id] = true; });
    var flat = fresh.filter(function (e) { return !(self.runs && self.runs.add(data.agent || self.agent, e, true)); });
    if (this.list && flat.length) {
      this.list.hidden = false;
      flat.forEach(function (e) { self.list.insertBefore(item(e), self.list.firstChild); });
      while (this.list.children.length > MAX_ITEMS) { this.list.removeChild(this.list.lastChild); }
    }
    if (this.empty && fresh.length) { this.empty.hidden = true; }
    if (this.runId && this.box.getAttribute("data-live-run") && fresh.some(function (e) {
      return document.querySelector('[data-span="' + CSS.escape(e.task_id || "") + '"]') ||
        (e.parent_task_id && document.querySelector('[data-span="' + CSS.escape(e.parent_task_id) + '"]'));
    })) {
      clearTimeout(this.refreshing);
      var box = this.box;
      this.refreshing = setTimeout(function () { refreshRun(box); }, RUN_REFRESH_MS);
    }
    if (this.sessionId && this.endsTurn(fresh)) {
      clearTimeout(this.refreshing);
      this.refreshing = setTimeout(function () {
        refreshParts(["[data-session-head]", "[data-turns]"]);
      }, RUN_REFRESH_MS);
    }
    if (data.stats && !showNumbers(data.agent, data.stats)) {
      var notice = document.querySelector("[data-live-new]");
      if (notice) { notice.hidden = false; }
    }
    Array.prototype.forEach.call(document.querySelectorAll("[data-first-event]"), function (first) {
      if (first.getAttribute("data-first-event") !== data.agent || !fresh.length) { return; }
      first.querySelector("[data-first-waiting]").hidden = true;
      first.querySelector("[data-first-arrived]").hidden = false;
    });
  };

  Feed.prototype.endsTurn = function (fresh) {
    var runs = this.sessionRuns;
    var sessionId = this.sessionId;
    fresh.forEach(function (e) {
      if (e.kind === "task.start" && e.session_id === sessionId) { runs[e.task_id] = true; }
    });
    return fresh.some(function (e) { return e.kind === "task.end" && runs[e.task_id]; });
  };

  function demo(form) {
    var button = form.querySelector("button");
    var steps = parseInt(form.getAttribute("data-steps"), 10) || 1;
    var csrf = form.querySelector('input[name="csrf"]').value;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      button.disabled = true;
      var step = 0;
      function next() {
        if (step >= steps) { button.disabled = false; button.textContent = "Run it again"; return; }
        button.textContent = "Running " + (step + 1) + " of " + steps + "…";
        fetch(form.action, {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf },
          body: new URLSearchParams({ csrf: csrf, step: String(step) }).toString()
        }).then(function (r) {
          if (!r.ok) { throw new Error("http " + r.status); }
          step += 1;
          setTimeout(next, DEMO_GAP_MS);
        }).catch(function () {
          button.disabled = false;
          button.textContent = "Demo failed · try again";
        });
      }
      next();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector("[data-live]");
    if (box && window.WebSocket && window.fetch) { new Feed(box).connect(); }
    var form = document.querySelector("form[data-demo]");
    if (form && window.fetch) { demo(form); }
  });
}());
