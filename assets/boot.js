// What runs before the wasm loads (inlined at the top of <head> by
// .ci/post-build.mjs, its hash in the page's policy; it runs before the
// module that loads the wasm and before the body is parsed):
// 1. The service worker that keeps the page working offline after a first
//    visit, registered once the page has loaded (where the browser offers
//    one; where it refuses, e.g. on file://, the page simply works online
//    only).
// 2. A guard: if the calculator stops, say so instead of leaving a dead or
//    blank page. It catches what the wasm cannot report itself:
//    - a panic in a release build, which aborts at once
//      (`-Cpanic=immediate-abort` keeps the panic machinery out of the wasm)
//      and reaches the page as a WebAssembly.RuntimeError;
//    - the wasm failing to download, compile or start.
//    Debug builds report panics from Rust, with the message, in the same banner.
(function () {
  // 3. Classes on <html> for the static lesson markup in index.html, set
  //    before it is parsed: `js` shows it (without JavaScript only the
  //    <noscript> text shows), `embed` lays it out compactly at once, and
  //    `full-first` hides it for addresses the full calculator will show
  //    (src/light.rs removes that class if it shows the address after all).
  var root = document.documentElement;
  var query = new URLSearchParams(location.search);
  root.classList.add('js');
  if (query.get('embed') === '1') root.classList.add('embed');
  if (query.get('mode') === 'detailed' || query.has('base') || query.has('ex')) root.classList.add('full-first');
  // A detailed address: "Loading the detailed model…" until it is there.
  if (query.get('mode') === 'detailed') root.classList.add('loading-full');

  // Registered two seconds after the page has loaded: started during the
  // first load, the worker's thread competed with the page's for the two
  // cores and registering held the parser; started at the load event, it
  // still competed with the first chart's frame (cold load -> frame after
  // the first chart, median of 30: 172.8 -> 149.0 ms; docs/benchmark.md).
  if ('serviceWorker' in navigator) {
    addEventListener('load', function () {
      setTimeout(function () {
        navigator.serviceWorker.register('sw.js').catch(function () {});
      }, 2000);
    });
  }

  // 4. How the light page (src/light.rs) loads the full calculator: its
  //    module, once started.
  //    One download and one start, however often it is asked for (the
  //    idle prefetch, then a click on Detailed while it downloads).
  var full;
  window.membudgetLoadFull = function () {
    return full || (full = import(new URL('./membudget.js', document.baseURI).href).then(function (m) {
      return m.default().then(function () { return m; });
    }));
  };

  // 5. How the full calculator reads a file (src/app/readers.rs): the
  //    readers' module (src/bin/readers.rs), downloaded and started on the
  //    first file, once; `what` names its export.
  var readers;
  window.membudgetRead = function (what, query, name, body) {
    readers = readers || import(new URL('./readers.js', document.baseURI).href).then(function (m) {
      return m.default().then(function () { return m; });
    });
    readers.catch(function () { readers = null; });
    return readers.then(function (m) { return m[what](query, name, body); });
  };

  function show(detail) {
    if (document.getElementById('panic-banner')) return;
    var banner = document.createElement('div');
    banner.id = 'panic-banner';
    banner.setAttribute('role', 'alert');
    banner.textContent = 'Something went wrong and the calculator stopped (' + detail +
      '). Reload the page to start again.';
    var body = document.body;
    if (body) body.insertBefore(banner, body.firstChild);
    else addEventListener('DOMContentLoaded', function () { show(detail); });
  }
  function fromWasm(error) {
    return error instanceof WebAssembly.RuntimeError || error instanceof WebAssembly.CompileError ||
      error instanceof WebAssembly.LinkError;
  }
  addEventListener('error', function (event) {
    var error = event.error;
    // Errors from the wasm, or anything thrown while the loader (inline in
    // this document) or the glue starts it.
    var file = (event.filename || '').split('#')[0];
    if (fromWasm(error) || file === location.href.split('#')[0] ||
      /\/(lesson-[0-9a-f]+|membudget|readers)\.js$/.test(file)) {
      show(error ? error.name + ': ' + error.message : event.message);
    }
  });
  addEventListener('unhandledrejection', function (event) {
    var error = event.reason;
    if (fromWasm(error)) show(error.name + ': ' + error.message);
  });
})();
