// One change stream for every tab of the app. Browsers allow six HTTP/1.1
// connections per host, so a stream per tab would stop the seventh tab from
// loading. Each tab's page connects here (see SharedEventSource in app.js);
// this worker holds one EventSource on /api/events and passes each event on
// to the tabs that want it: a change to the tabs following that session or
// every session, ready, open and error to all.
'use strict';

const tabs = new Map(); // port -> the session it follows, '' for every session
let source = null;
let down = false; // the stream failed and has not opened since

function broadcast(msg, session) {
  tabs.forEach(function (follows, port) {
    if (!session || !follows || follows === session) port.postMessage(msg);
  });
}

function open() {
  const s = new EventSource('/api/events');
  source = s;
  s.onopen = function () {
    down = false;
    broadcast({ type: 'open', readyState: s.readyState });
  };
  s.onerror = function () {
    down = true;
    broadcast({ type: 'error', readyState: s.readyState });
    if (s.readyState === EventSource.CLOSED) {
      // The server refused the stream (503 when full): every tab's page
      // reconnects on its own schedule, and the first one opens a new stream.
      tabs.clear();
      source = null;
    }
  };
  s.addEventListener('ready', function (e) {
    broadcast({ type: 'event', name: 'ready', data: e.data });
  });
  s.addEventListener('change', function (e) {
    let session = '';
    try { session = JSON.parse(e.data).session_id || ''; } catch (err) { /* pass it to every tab */ }
    broadcast({ type: 'event', name: 'change', data: e.data }, session);
  });
}

self.onconnect = function (e) {
  const port = e.ports[0];
  port.onmessage = function (m) {
    if (m.data.type === 'connect') {
      tabs.set(port, m.data.session || '');
      if (!source) {
        open();
      } else if (source.readyState === EventSource.OPEN) {
        // The stream is already open: this tab gets its own open and ready,
        // so it catches up as it would on a stream of its own.
        port.postMessage({ type: 'open', readyState: source.readyState });
        port.postMessage({ type: 'event', name: 'ready', data: '{}' });
      } else if (down) {
        port.postMessage({ type: 'error', readyState: source.readyState });
      }
    } else if (m.data.type === 'close') {
      tabs.delete(port);
      port.close();
      if (tabs.size === 0 && source) {
        source.close();
        source = null;
        down = false;
      }
    }
  };
};
