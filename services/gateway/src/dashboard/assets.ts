/**
 * The dashboard's only style sheet and script, served by the gateway itself (no CDN: air-gapped installs
 * work) under a strict Content-Security-Policy (`default-src 'self'`, no inline script or style).
 */
export const STYLE_CSS = `
:root { --fg: #1a1a1a; --muted: #4a4a4a; --bg: #ffffff; --panel: #f4f5f7; --line: #c9ccd1; --accent: #0b57d0; --accent-fg: #ffffff;
  --danger: #a50e0e; --ok: #0b6b2b; --focus: #f9a825; font-size: 100%; }
* { box-sizing: border-box; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: var(--fg); background: var(--bg); line-height: 1.5; }
a { color: var(--accent); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem; }
.skip:focus { left: .5rem; }
header { background: var(--panel); border-bottom: 1px solid var(--line); }
header nav { max-width: 60rem; margin: 0 auto; padding: .5rem 1rem; display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; }
header .brand { font-weight: 700; margin-right: auto; color: var(--fg); text-decoration: none; }
header form { margin: 0; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
form.stack { display: grid; gap: .75rem; max-width: 28rem; }
label { font-weight: 600; display: block; }
input[type=text], input[type=email], input[type=password], input[type=file], select, textarea { width: 100%; padding: .5rem; font: inherit; color: var(--fg);
  background: var(--bg); border: 1px solid var(--muted); border-radius: 4px; }
fieldset { border: 1px solid var(--line); border-radius: 4px; padding: .5rem .75rem; }
fieldset label { display: inline; font-weight: 400; margin-right: 1rem; }
button, .button { font: inherit; padding: .5rem 1rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-fg);
  cursor: pointer; text-decoration: none; display: inline-block; }
button.secondary, .button.secondary { background: var(--bg); color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); }
button.link { background: none; border: none; color: var(--accent); padding: 0; text-decoration: underline; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.notice { padding: .75rem 1rem; border-radius: 4px; border: 1px solid var(--line); background: var(--panel); margin: 1rem 0; }
.notice.error { border-color: var(--danger); color: var(--danger); background: #fdecea; }
.notice.ok { border-color: var(--ok); color: var(--ok); background: #e8f5ec; }
.secret { display: flex; gap: .5rem; flex-wrap: wrap; }
.secret input { flex: 1 1 20rem; font-family: ui-monospace, monospace; }
.hint { color: var(--muted); font-size: .9rem; margin: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code { font-family: ui-monospace, monospace; }
.mode { font-size: .8rem; font-weight: 700; padding: .1rem .4rem; border-radius: 3px; border: 1px solid currentColor; }
.mode.sandbox { color: #6b3f00; }
.mode.live { color: var(--ok); }
progress { width: 10rem; max-width: 60vw; height: 1rem; vertical-align: middle; accent-color: var(--accent); }
.pct { margin-left: .5rem; font-variant-numeric: tabular-nums; }
.status { font-weight: 600; }
.status-failed { color: var(--danger); }
.status-completed { color: var(--ok); }
.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
.filters label { display: inline; }
.filters select { width: auto; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.player { width: 100%; max-width: 40rem; display: block; margin: .5rem 0; }
.subtitles { background: var(--panel); border: 1px solid var(--line); padding: .75rem; max-height: 24rem; overflow: auto; white-space: pre-wrap; }
.spaces { margin: 0 0 1rem; }
@media (max-width: 40rem) {
  table, thead, tbody, tr, th, td { display: block; }
  thead { position: absolute; left: -999px; }
  tr { border: 1px solid var(--line); border-radius: 4px; margin-bottom: .75rem; padding: .25rem .5rem; }
  td { border: none; padding: .25rem 0; }
  td::before { content: attr(data-label) ": "; font-weight: 600; }
}
`;

/**
 * Copy buttons (`data-copy="<input id>"`) and live progress: every `progress[data-events]` follows its
 * record's event stream (EventSource on the session-bound `/dashboard/events/…` route) and updates the
 * bar, its percentage and the row's status; a record page (`[data-reload-on-finish]`) reloads once
 * the record finished, to show its player or failure reason (unless its stream is playing: then a link
 * to the result appears under the player, so the listener is not cut off). Without script the pages still work
 * (reload to see progress).
 */
export const APP_JS = `
"use strict";
function followProgress(bar) {
  var url = bar.getAttribute("data-events");
  if (!url || typeof EventSource === "undefined") return;
  var scope = bar.closest("tr, dl, section") || document;
  var text = scope.querySelector("[data-progress-text]");
  var status = scope.querySelector("[data-status]");
  var source = new EventSource(url);
  var show = function (progress, state) {
    if (typeof progress === "number") { bar.value = progress; bar.textContent = progress + "%"; if (text) text.textContent = progress + "%"; }
    if (state && status) { status.textContent = state; status.className = "status status-" + state; }
  };
  source.addEventListener("progress", function (e) {
    var data = JSON.parse(e.data); show(data.task_progress, data.task_status);
  });
  var finish = function (e) {
    var data = JSON.parse(e.data); show(data.task_progress, data.task_status);
    source.close();
    bar.removeAttribute("data-events");
    if (!bar.closest("[data-reload-on-finish]")) return;
    // A listener of the stream keeps listening: the page offers the result instead of reloading under them.
    var player = document.querySelector("audio[data-hls]");
    if (player && !player.paused && !player.ended) {
      var note = document.createElement("p");
      note.setAttribute("data-finished-note", "");
      var link = document.createElement("a");
      link.href = window.location.href;
      link.textContent = data.task_status === "completed" ? "The book is ready: show the result" : "The book failed: show why";
      note.appendChild(link);
      player.insertAdjacentElement("afterend", note);
      return;
    }
    window.location.reload();
  };
  source.addEventListener("completed", finish);
  source.addEventListener("failed", finish);
}
function playStream(audio) {
  var url = audio.getAttribute("data-hls");
  if (audio.canPlayType("application/vnd.apple.mpegurl")) { audio.src = url; return; }
  var Hls = window.Hls;
  if (!Hls || !Hls.isSupported()) { audio.insertAdjacentText("afterend", "This browser cannot play the stream."); return; }
  var hls = new Hls({ enableWorker: false });
  var fragments = 0;
  hls.on(Hls.Events.FRAG_LOADED, function () { audio.setAttribute("data-fragments", String(++fragments)); });
  hls.loadSource(url);
  hls.attachMedia(audio);
}
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("progress[data-events]").forEach(followProgress);
});
window.addEventListener("load", function () {
  document.querySelectorAll("audio[data-hls]").forEach(playStream);
});
document.addEventListener("click", function (event) {
  var button = event.target instanceof Element ? event.target.closest("[data-copy]") : null;
  if (!button) return;
  var input = document.getElementById(button.getAttribute("data-copy"));
  if (!input) return;
  var status = document.getElementById(button.getAttribute("data-copy") + "-status");
  var done = function (ok) { if (status) status.textContent = ok ? "Copied." : "Select the key and copy it by hand."; };
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(input.value).then(function () { done(true); }, function () { input.select(); done(false); });
  } else { input.select(); done(false); }
});
`;
