// The board's only script: live updates of the page's [data-live] regions
// when the repository changes, live session logs over Server-Sent Events,
// and tabs. Text from the server is inserted as text nodes, never as markup.
(function () {
  "use strict";

  var canonical = document.body.dataset.canonical;
  if (canonical && location.pathname !== canonical) {
    // A refused action rendered this page in answer to a POST: make the
    // address the page's own, so refreshing it works.
    history.replaceState(null, "", canonical);
  }

  // Logs.
  var streams = {};
  function startLogs(root) {
    root.querySelectorAll("pre.log[data-log]").forEach(function (pre) {
      if (streams[pre.id]) { streams[pre.id].close(); }
      var es = new EventSource(pre.dataset.log);
      streams[pre.id] = es;
      es.addEventListener("out", function (ev) {
        var follow = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        JSON.parse(ev.data).forEach(function (seg) {
          var span = document.createElement("span");
          if (seg.c) { span.className = seg.c; }
          span.textContent = seg.t;
          pre.appendChild(span);
        });
        if (follow) { pre.scrollTop = pre.scrollHeight; }
      });
      es.addEventListener("end", function (ev) {
        es.close();
        delete streams[pre.id];
        var end = JSON.parse(ev.data);
        var p = document.createElement("span");
        p.className = "end";
        p.textContent = "\n— " + (end.of || "session") + " " + end.state + ": " + end.verdict + " —\n";
        pre.appendChild(p);
      });
      es.addEventListener("failed", function (ev) {
        es.close();
        var p = document.createElement("span");
        p.className = "end";
        p.textContent = "\n— " + JSON.parse(ev.data) + " —\n";
        pre.appendChild(p);
      });
    });
  }

  // Tabs: a button's data-tab names the pane it shows.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-tab]");
    if (!b) { return; }
    var list = b.parentNode;
    list.querySelectorAll("[data-tab]").forEach(function (o) {
      o.removeAttribute("aria-selected");
      var pane = document.getElementById(o.dataset.tab);
      if (pane) { pane.hidden = true; }
    });
    b.setAttribute("aria-selected", "true");
    var pane = document.getElementById(b.dataset.tab);
    if (pane) { pane.hidden = false; }
  });

  // Live updates.
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { cache: "no-store", credentials: "same-origin" }).then(function (res) {
      return res.ok ? res.text() : null;
    }).then(function (html) {
      if (html === null) { return; }
      var doc = new DOMParser().parseFromString(html, "text/html");
      document.querySelectorAll("[data-live]").forEach(function (el) {
        var fresh = doc.getElementById(el.id);
        if (!fresh) { return; }
        if (el.dataset.liveKey !== undefined && el.dataset.liveKey === fresh.dataset.liveKey) { return; }
        var node = document.importNode(fresh, true);
        el.replaceWith(node);
        startLogs(node);
      });
      document.body.dataset.refreshed = String(Date.now());
    }).catch(function () {}).then(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }

  var conn = document.getElementById("conn");
  var events = new EventSource(document.body.dataset.events);
  events.addEventListener("open", function () { if (conn) { conn.className = "conn up"; } });
  events.addEventListener("error", function () { if (conn) { conn.className = "conn down"; } });
  var first = true;
  events.addEventListener("open", function () {
    // After a reconnect, changes made while disconnected were missed.
    if (!first) { refresh(); }
    first = false;
  });
  events.addEventListener("change", refresh);

  startLogs(document);
})();
