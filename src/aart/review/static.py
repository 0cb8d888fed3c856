"""The review app's only script and style sheet, served from the package (no CDN: it works
offline, and the Content-Security-Policy allows nothing else)."""

SCRIPT = r"""
// Keyboard first: j/k next and previous, y/n good or not, 1-9 cycle a dimension through
// matches, does not and not judged,
// v/s/u a human verdict, e edit, x exclude, Enter save. Typing in a field is left alone.
document.addEventListener("keydown", function (ev) {
  var t = ev.target;
  if (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT") && t.type !== "checkbox" && t.type !== "radio") {
    if (ev.key === "Escape") { t.blur(); }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
  var form = document.getElementById("label");
  function go(id) { var a = document.getElementById(id); if (a) { window.location = a.href; } }
  function pick(id) { var el = document.getElementById(id); if (el) { el.click(); } }
  function cycle(n) {
    var order = ["none", "yes", "no"];
    for (var i = 0; i < order.length; i++) {
      var el = document.getElementById("dim-" + n + "-" + order[i]);
      if (el && el.checked) { pick("dim-" + n + "-" + order[(i + 1) % order.length]); return; }
    }
  }
  var k = ev.key;
  if (k === "j") { go("next"); }
  else if (k === "k") { go("prev"); }
  else if (k === "y") { pick("good-yes"); }
  else if (k === "n") { pick("good-no"); }
  else if (k === "v") { pick("verdict-violates"); }
  else if (k === "s") { pick("verdict-safe"); }
  else if (k === "u") { pick("verdict-unsure"); }
  else if (k === "x") { pick("exclude"); }
  else if (k === "e") { var e = document.getElementById("edit"); if (e) { e.focus(); ev.preventDefault(); } }
  else if (k >= "1" && k <= "9") { cycle(k); }
  else if (k === "Enter" && form) { form.submit(); }
  else { return; }
  ev.preventDefault();
});
"""

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:1000px;color:#222;padding:0 1rem}
nav a{margin-right:1rem}pre{white-space:pre-wrap;background:#f6f6f6;padding:.6rem;border-radius:4px}
.muted{color:#777}.kpi{display:inline-block;margin:0 1.5rem .5rem 0}.kpi b{display:block;font-size:1.2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
fieldset{border:1px solid #ddd;margin:.6rem 0}textarea{width:100%;min-height:4rem}
.done{color:#176f2c}.todo{color:#b00020}kbd{border:1px solid #bbb;border-radius:3px;padding:0 .25rem}
"""
