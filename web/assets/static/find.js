// The board's search and filters, and its notifications (opt-in). Text
// from the server is only ever read from attributes and inserted as text.
(function () {
  "use strict";

  // Search and filters: the page's address follows the form as it is
  // typed into, and the board's live regions are fetched again for it
  // (app.js does the fetching, on "board:refresh").
  var form = document.getElementById("find");
  if (form) {
    var timer = null;
    var apply = function () {
      timer = null;
      var out = new URLSearchParams();
      new FormData(form).forEach(function (v, k) {
        if (v !== "" && !(k === "sort" && v === "changed")) { out.append(k, v); }
      });
      var qs = out.toString();
      var clear = form.querySelector("a.clear");
      if (clear) { clear.hidden = qs === ""; }
      history.replaceState(null, "", qs ? "/?" + qs : "/");
      document.dispatchEvent(new Event("board:refresh"));
    };
    form.addEventListener("input", function (ev) {
      if (timer) { clearTimeout(timer); }
      // Typing waits for a pause; a choice in a list applies at once.
      timer = setTimeout(apply, ev.target.name === "q" ? 60 : 0);
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      if (timer) { clearTimeout(timer); }
      apply();
    });
  }

  // Notifications: when a task on the page turns to review, fails, is
  // exhausted, or a run ends. Off until asked for (the button in the
  // header), and only while the browser grants the permission.
  var KEY = "agentmine-notify";
  var btn = document.getElementById("notify");
  // The board page watches its cards and the runs, the Runs page its runs.
  if (!btn || !("Notification" in window) || !document.getElementById("board") && !document.getElementById("runs-table")) { return; }
  btn.hidden = false;
  function on() { return localStorage.getItem(KEY) === "1" && window.Notification.permission === "granted"; }
  function show() {
    btn.textContent = on() ? "notifications on" : "notify me";
    btn.setAttribute("aria-pressed", on() ? "true" : "false");
  }
  btn.addEventListener("click", function () {
    if (on()) {
      localStorage.removeItem(KEY);
      show();
      return;
    }
    Promise.resolve(window.Notification.requestPermission()).then(function (p) {
      if (p === "granted") { localStorage.setItem(KEY, "1"); }
      show();
    });
  });
  show();

  var FAILED = { failed: true, dod_failed: true, tainted: true };
  function state() {
    var s = { tasks: {}, runs: {} };
    document.querySelectorAll("article.card[data-task]").forEach(function (c) {
      s.tasks[c.dataset.task] = { st: c.dataset.status, ex: c.hasAttribute("data-exhausted"),
        title: c.dataset.title || "", short: c.dataset.task.slice(0, 8) };
    });
    document.querySelectorAll("[data-run]").forEach(function (r) {
      s.runs[r.dataset.run] = { st: r.dataset.state, result: r.dataset.result || "" };
    });
    return s;
  }
  function tell(title, body, tag) {
    try {
      new window.Notification(title, { body: body, tag: tag });
    } catch (e) { /* a browser that refuses: nothing to do */ }
  }
  var last = state();
  document.addEventListener("board:refreshed", function () {
    var now = state();
    if (on()) {
      Object.keys(now.tasks).forEach(function (id) {
        var a = last.tasks[id], b = now.tasks[id];
        if (!a) { return; }
        var what = "";
        if (b.ex && !a.ex) {
          what = "exhausted its attempts";
        } else if (FAILED[b.st] && !FAILED[a.st]) {
          what = b.st === "failed" ? "failed" : b.st.replace("_", " ");
        } else if (b.st === "review" && a.st !== "review") {
          what = "needs review";
        }
        if (what) { tell("#" + b.short + " " + what, b.title, "task-" + id + "-" + b.st); }
      });
      Object.keys(last.runs).forEach(function (name) {
        var a = last.runs[name], b = now.runs[name];
        if (a.st === "running" && (!b || b.st !== "running")) {
          tell("run " + name + " ended", b ? (b.result || b.st) : "", "run-" + name);
        }
      });
    }
    last = now;
  });
})();
