// The board's only script: live updates of the page's [data-live] regions
// when the repository changes and live logs, both over the page's one
// Server-Sent Events stream, and tabs. Text from the server is inserted as text nodes, never as markup.
(function () {
  "use strict";

  var canonical = document.body.dataset.canonical;
  if (canonical && location.pathname !== canonical) {
    // A refused action rendered this page in answer to a POST: make the
    // address the page's own, so refreshing it works.
    history.replaceState(null, "", canonical);
  }

  // The page's one stream (GET /stream, see web/stream.go) carries the
  // board's changes and every log the page shows. panes maps a log's key
  // to its <pre>, the byte offset the page holds, and whether it ended.
  var panes = {};
  var es = null, streamKeys = null, opened = false, retry = null;
  var conn = document.getElementById("conn");
  function setConn(c) { if (conn) { conn.className = "conn " + c; } }

  function note(pre, text, cls) {
    var p = document.createElement("span");
    p.className = cls;
    p.textContent = text;
    pre.appendChild(p);
  }

  // syncPanes takes in the page's log panes: a pane that replaced one of
  // the same log (the page was fetched again) takes over its text and
  // offset; panes no longer on the page are dropped.
  function syncPanes() {
    var now = {};
    document.querySelectorAll("pre.log[data-log]").forEach(function (pre) {
      var key = pre.dataset.log, old = panes[key];
      if (old && old.pre !== pre) {
        while (old.pre.firstChild) { pre.appendChild(old.pre.firstChild); }
      }
      now[key] = old ? old : { off: 0, ended: false, line: [], nodes: [], col: 0 };
      now[key].pre = pre;
    });
    panes = now;
  }

  // put writes one log segment into a pane as a terminal would: text
  // after a carriage return (seg.r) overwrites the line from its start.
  // p.line holds the current line's segments, p.nodes their spans, p.col
  // the cursor's column.
  function put(p, seg) {
    if (seg.r) { p.col = 0; return; }
    var parts = seg.t.split("\n");
    for (var i = 0; i < parts.length; i++) {
      if (i > 0) {
        p.pre.appendChild(document.createTextNode("\n"));
        p.line = []; p.nodes = []; p.col = 0;
      }
      if (parts[i] !== "") { write(p, parts[i], seg); }
    }
  }

  // span is one styled run of text: classes, and 256- or true-colour set
  // through the style object (numbers the server formatted, never text).
  function span(t, seg) {
    var el = document.createElement("span");
    if (seg.c) { el.className = seg.c; }
    if (seg.f) { el.style.color = seg.f; }
    if (seg.b) { el.style.backgroundColor = seg.b; }
    el.textContent = t;
    return el;
  }

  function write(p, t, seg) {
    var len = 0;
    p.line.forEach(function (s) { len += s.t.length; });
    var run = { t: t, c: seg.c, f: seg.f, b: seg.b };
    if (p.col >= len) {
      var el = span(t, seg);
      p.pre.appendChild(el);
      p.line.push(run);
      p.nodes.push(el);
      p.col = len + t.length;
      return;
    }
    // Overwrite columns col..col+len(t) of the line, keep the rest.
    var head = [], tail = [], pos = 0, end = p.col + t.length;
    p.line.forEach(function (s) {
      var a = pos, z = pos + s.t.length;
      pos = z;
      if (a < p.col) { head.push({ t: s.t.slice(0, Math.min(z, p.col) - a), c: s.c, f: s.f, b: s.b }); }
      if (z > end) { tail.push({ t: s.t.slice(Math.max(a, end) - a), c: s.c, f: s.f, b: s.b }); }
    });
    var line = head.concat([run], tail);
    var frag = document.createDocumentFragment();
    var nodes = line.map(function (s) { var n = span(s.t, s); frag.appendChild(n); return n; });
    p.pre.insertBefore(frag, p.nodes[0]);
    p.nodes.forEach(function (n) { n.remove(); });
    p.line = line;
    p.nodes = nodes;
    p.col = end;
  }

  function wanted() {
    return Object.keys(panes).filter(function (k) { return !panes[k].ended; }).sort();
  }

  function closeStream() {
    if (retry) { clearTimeout(retry); retry = null; }
    if (es) { es.close(); es = null; }
    streamKeys = null;
  }

  function openStream() {
    closeStream();
    if (document.hidden) { setConn("paused"); return; }
    var keys = wanted();
    var q = keys.map(function (k) { return "log=" + encodeURIComponent(k + "@" + panes[k].off); }).join("&");
    var s = new EventSource(document.body.dataset.stream + (q ? "?" + q : ""));
    es = s;
    streamKeys = keys.join("\n");
    s.addEventListener("open", function () {
      setConn("up");
      // Changes made while no stream was open were missed.
      if (opened) { refresh(); }
      opened = true;
    });
    s.addEventListener("error", function () {
      // The browser's own reconnect would ask for every log from where
      // the stream started: reopen with the offsets the page holds.
      setConn("down");
      s.close();
      if (es === s && !retry) {
        retry = setTimeout(function () { retry = null; if (es === s) { openStream(); } }, 500);
      }
    });
    s.addEventListener("change", refresh);
    s.addEventListener("out", function (ev) {
      var d = JSON.parse(ev.data), p = panes[d.log];
      if (!p || p.ended) { return; }
      var pre = p.pre;
      var follow = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      d.segs.forEach(function (seg) { put(p, seg); });
      p.off = d.off;
      pre.dataset.off = String(d.off);
      if (follow) { pre.scrollTop = pre.scrollHeight; }
    });
    s.addEventListener("end", function (ev) {
      var d = JSON.parse(ev.data), p = panes[d.log];
      if (!p || p.ended) { return; }
      p.ended = true;
      p.off = d.off;
      note(p.pre, "\n— " + (d.of || "session") + " " + d.state + ": " + d.verdict + " —\n", "end");
    });
    s.addEventListener("failed", function (ev) {
      var d = JSON.parse(ev.data), p = panes[d.log];
      if (!p || p.ended) { return; }
      p.ended = true;
      note(p.pre, "\n— the log cannot be shown: " + d.error + " —\n", "end refused");
    });
  }

  // restream reopens the stream when the page's logs changed.
  function restream() {
    syncPanes();
    if (document.hidden) { return; }
    // A log that ended or left the page needs no new stream; a new one does.
    var have = (streamKeys || "").split("\n");
    if (streamKeys === null || wanted().some(function (k) { return have.indexOf(k) < 0; })) { openStream(); }
  }

  // A hidden tab holds no stream (a browser opens six connections per
  // host, shared by every tab); shown again, it catches up.
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      closeStream();
      setConn("paused");
    } else {
      openStream();
    }
  });

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
        keepTab(el, node);
        el.replaceWith(node);
      });
      restream();
      document.body.dataset.refreshed = String(Date.now());
      document.dispatchEvent(new Event("board:refreshed"));
    }).catch(function () {}).then(function () {
      busy = false;
      if (again) { again = false; refresh(); }
    });
  }

  // keepTab selects in a fetched region the tab that was selected in the
  // region it replaces, when it is still there.
  function keepTab(old, node) {
    var sel = old.querySelector('[data-tab][aria-selected="true"]');
    var b = sel && node.querySelector('[data-tab="' + CSS.escape(sel.dataset.tab) + '"]');
    if (!b) { return; }
    node.querySelectorAll("[data-tab]").forEach(function (o) {
      o.removeAttribute("aria-selected");
      var pane = node.querySelector("#" + CSS.escape(o.dataset.tab));
      if (pane) { pane.hidden = o !== b; }
    });
    b.setAttribute("aria-selected", "true");
  }

  // Another script (find.js) asks for the page again.
  document.addEventListener("board:refresh", refresh);

  syncPanes();
  openStream();
})();
