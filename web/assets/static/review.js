// Line comments of a review (the task page's review form): a click on a
// line of a diff opens a comment box for that line; each comment added
// becomes a hidden "line" field of the form, "path:line: text", which the
// new attempt's prompt carries. Text is set as text, never as markup.
(function () {
  "use strict";
  var at = null;

  function form() { return document.getElementById("review-form"); }

  document.addEventListener("click", function (ev) {
    var line = ev.target.closest(".patch [data-ref]");
    if (line && form()) {
      at = line.dataset.ref;
      document.getElementById("line-at").textContent = at;
      document.getElementById("line-box").hidden = false;
      var input = document.getElementById("line-text");
      input.focus();
      return;
    }
    if (ev.target.id === "line-add") { add(); return; }
    if (ev.target.classList.contains("line-remove")) { ev.target.closest("li").remove(); }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.target.id === "line-text" && ev.key === "Enter") {
      ev.preventDefault();
      add();
    }
  });

  function add() {
    var input = document.getElementById("line-text");
    var text = input.value.trim();
    if (!at || !text) { return; }
    var value = at + ": " + text;
    var li = document.createElement("li");
    var hidden = document.createElement("input");
    hidden.type = "hidden";
    hidden.name = "line";
    hidden.value = value;
    var span = document.createElement("span");
    span.textContent = value + " ";
    var rm = document.createElement("button");
    rm.type = "button";
    rm.className = "line-remove";
    rm.textContent = "remove";
    li.appendChild(hidden);
    li.appendChild(span);
    li.appendChild(rm);
    document.getElementById("line-comments").appendChild(li);
    input.value = "";
    document.getElementById("line-box").hidden = true;
    at = null;
  }
})();
