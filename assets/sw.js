// membudget's service worker: after the first visit the calculator works
// offline. Network first (so a new build is picked up at once), the cache
// when the network is not there. Only this page's own files are handled.
const CACHE = 'membudget-v1';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith(
    fetch(request)
      .then((response) => {
        if (response.ok) {
          const copy = response.clone();
          caches.open(CACHE).then((cache) => cache.put(request, copy));
        }
        return response;
      })
      .catch(() =>
        caches.match(request, { ignoreSearch: request.mode === 'navigate' }).then(
          (hit) => hit || Response.error(),
        ),
      ),
  );
});
