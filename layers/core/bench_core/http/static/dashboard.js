// Live dashboard pages: one WebSocket per page (the feed named by [data-live]), reconnecting
// with backoff after a drop and saying so; new events go to the top of the feed, the numbers
// (already formatted by the server) replace the old ones. The /try page's demo button sends its
// runs one by one so they arrive live. Text only ever goes in through textContent.
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
    var self = this;
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
    if (this.list && fresh.length) {
      fresh.forEach(function (e) { self.list.insertBefore(item(e), self.list.firstChild); });
      while (this.list.children.length > MAX_ITEMS) { this.list.removeChild(this.list.lastChild); }
      if (this.empty) { this.empty.hidden = true; }
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
