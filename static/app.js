// The review app's behaviour that htmx does not cover: the live pill, live
// refreshes at most once every two seconds, step bodies loaded on opening,
// expand/collapse, #step-<seq> links, and the delete and export dialogs.
(function () {
  'use strict';

  const refreshGap = 2000; // a live refresh at most once every two seconds
  const offlineAfter = 3000; // reconnecting this long means the server is offline

  // One change stream per browser, however many tabs are open: htmx's SSE
  // extension gets a SharedEventSource, which follows the stream held by
  // the shared worker static/events-worker.js, so sse-connect and
  // hx-trigger="sse:..." work as with a stream of the tab's own. Without
  // SharedWorker, each tab opens its own EventSource.
  class SharedEventSource extends EventTarget {
    constructor(url) {
      super();
      this.url = new URL(url, location.href).href;
      this.readyState = EventSource.CONNECTING;
      this.onopen = null;
      this.onerror = null;
      this.port = new SharedWorker('/static/events-worker.js', { name: 'events' }).port;
      this.port.onmessage = (m) => this.receive(m.data);
      this.port.postMessage({ type: 'connect', session: new URL(this.url).searchParams.get('session') || '' });
      this.leave = () => this.close();
      window.addEventListener('pagehide', this.leave);
    }

    receive(msg) {
      if (this.readyState === EventSource.CLOSED) return;
      if (msg.type === 'event') {
        this.dispatchEvent(new MessageEvent(msg.name, { data: msg.data }));
        return;
      }
      this.readyState = msg.readyState;
      if (this.readyState === EventSource.CLOSED) this.close();
      const ev = new Event(msg.type);
      this.dispatchEvent(ev);
      const handler = msg.type === 'open' ? this.onopen : this.onerror;
      if (handler) handler.call(this, ev);
    }

    close() {
      this.readyState = EventSource.CLOSED;
      window.removeEventListener('pagehide', this.leave);
      this.port.postMessage({ type: 'close' });
      this.port.close();
    }
  }
  // A page restored from the back/forward cache comes back with its
  // stream closed (pagehide closed it) and its data as it was when left:
  // it is loaded again, fresh and live. Without this, Back to the list
  // showed a list that no push updated (TestBrowserListFilters).
  window.addEventListener('pageshow', function (e) {
    if (e.persisted) location.reload();
  });
  if (window.SharedWorker) {
    htmx.createEventSource = function (url) {
      try {
        return new SharedEventSource(url);
      } catch (e) {
        return new EventSource(url); // a worker refused, e.g. in a private window
      }
    };
  }

  // Times: the server writes each recorded time as <time datetime> with a
  // UTC text; the page shows it in the viewer's time zone, and "ago" times
  // as a person would say them. Every <time> added later (live updates,
  // fragments) is shown the same way.
  function pad(n) { return String(n).padStart(2, '0'); }
  function agoText(ms) {
    const min = Math.floor(ms / 60000);
    if (min < 1) return 'just now';
    if (min < 60) return min + ' min ago';
    const h = Math.floor(min / 60);
    if (h < 24) return h + ' h ago';
    const d = Math.floor(h / 24);
    return d === 1 ? '1 day ago' : d + ' days ago';
  }
  function localTime(el) {
    const t = new Date(el.getAttribute('datetime'));
    if (isNaN(t)) return;
    const day = t.getFullYear() + '-' + pad(t.getMonth() + 1) + '-' + pad(t.getDate());
    const clock = pad(t.getHours()) + ':' + pad(t.getMinutes());
    let text = day + ' ' + clock;
    if (el.dataset.format === 'time') text = clock + ':' + pad(t.getSeconds());
    if (el.dataset.format === 'ago') text = agoText(Date.now() - t.getTime());
    if (el.textContent !== text) el.textContent = text;
    const full = t.toLocaleString();
    if (el.title !== full) el.title = full;
  }
  function localTimes(root) {
    if (root.matches && root.matches('time[datetime]')) localTime(root);
    if (root.querySelectorAll) root.querySelectorAll('time[datetime]').forEach(localTime);
  }
  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    new MutationObserver(function (records) {
      records.forEach(function (r) { r.addedNodes.forEach(localTimes); });
    }).observe(document.body, { childList: true, subtree: true });
  });

  // Live pill: connecting, live, server offline. The page keeps its content
  // while offline and catches up on the next `ready`.
  let offlineTimer = null;
  function setPill(state) {
    const pill = document.getElementById('live-pill');
    if (!pill) return;
    pill.textContent = state;
    pill.className = 'pill ' + state.replace(' ', '-');
  }
  document.addEventListener('htmx:sseOpen', function () {
    clearTimeout(offlineTimer);
    offlineTimer = null;
    setPill('live');
  });
  document.addEventListener('htmx:sseError', function () {
    const pill = document.getElementById('live-pill');
    if (pill && pill.textContent === 'live') setPill('connecting');
    if (!offlineTimer) offlineTimer = setTimeout(function () { setPill('server offline'); }, offlineAfter);
  });

  // throttled runs fn at most once every refreshGap, and always once more
  // after the last call, so no change is missed.
  function throttled(fn) {
    let last = 0;
    let timer = null;
    return function () {
      if (timer) return;
      const wait = Math.max(0, last + refreshGap - Date.now());
      timer = setTimeout(async function () {
        timer = null;
        last = Date.now();
        try { await fn(); } catch (e) { console.warn('refresh failed', e); }
      }, wait);
    };
  }

  const refresh = throttled(function () {
    if (document.getElementById('session')) return refreshSession();
    if (document.getElementById('rows')) return refreshRows();
  });
  document.addEventListener('sse:change', refresh);
  document.addEventListener('sse:ready', refresh);

  async function refreshRows() {
    const rows = document.getElementById('rows');
    const res = await fetch(rows.dataset.refreshUrl, { headers: { 'HX-Request': 'true' } });
    if (!res.ok) return;
    // The total's estimate loads after the rows (hx-trigger="load"); the
    // last one stays shown until it has.
    const shown = rows.querySelector('[data-testid="total-estimate"]');
    rows.innerHTML = await res.text();
    const next = rows.querySelector('[data-testid="total-estimate-loading"]');
    if (shown && next) next.replaceChildren(...shown.childNodes);
    htmx.process(rows);
  }

  function openSeqs() {
    return Array.from(document.querySelectorAll('details.step[open]'), function (d) { return d.dataset.seq; });
  }

  async function refreshSession() {
    const session = document.getElementById('session');
    if (session.dataset.gone) return;
    const url = new URL(session.dataset.updatesUrl, location.href);
    url.searchParams.set('since', session.dataset.stamp);
    url.searchParams.set('open', openSeqs().join(','));
    const from = anchoredTurns();
    if (from.length) url.searchParams.set('from', from.join(','));
    const res = await fetch(url, { headers: { 'HX-Request': 'true' } });
    if (res.status === 404) return showGone();
    if (res.status === 205) { // more turns changed than an update redraws: read the page again
      if (writing()) setTimeout(refresh, refreshGap); // not under the reader's note: ask again
      else location.reload();
      return;
    }
    if (!res.ok || res.status === 204) return; // 204: nothing changed since the page's stamp
    const stamp = res.headers.get('X-Session-Stamp');
    const doc = new DOMParser().parseFromString('<body>' + await res.text() + '</body>', 'text/html');
    doc.querySelectorAll('template[data-region]').forEach(function (t) {
      const old = document.getElementById(t.dataset.region);
      if (!old) return;
      old.replaceWith(document.importNode(t.content, true));
      const fresh = document.getElementById(t.dataset.region);
      if (fresh) htmx.process(fresh); // the Changes section's more-files control
    });
    const turns = document.getElementById('turns');
    const shown = turns.querySelectorAll('section.turn');
    doc.querySelectorAll('template[data-turn]').forEach(function (t) {
      const fresh = document.importNode(t.content, true).firstElementChild;
      const old = document.getElementById(t.dataset.turn);
      if (old) {
        keepOpenBlocks(old, fresh);
        keepEarlierSteps(old, fresh);
        old.replaceWith(fresh);
      } else if (!later() && (shown.length === 0 || Number(fresh.dataset.number) >= Number(shown[0].dataset.number))) {
        turns.appendChild(fresh);
      } else {
        return; // an older turn than those shown, or one the later-turns control will show
      }
      htmx.process(fresh);
      filterTimeline(fresh, false);
    });
    const keep = doc.querySelector('template[data-keep-turns]');
    if (keep) keepLastTurns(turns, keep);
    if (stamp) session.dataset.stamp = stamp;
  }

  // keepLastTurns drops the oldest turns of a page that has appended a
  // live session's new turns past twice the turns its first view shows
  // (keep's count), keeping that many, and puts in place the earlier-turns
  // control the update drew for the rest: the page stays the size of a
  // first view or two however long it is open. Only on a page that showed
  // the last turns at first (not every turn, nor those around a link) and
  // to which the reader added none, and not while one of the turns to drop
  // is on the screen.
  const firstTurns = document.querySelectorAll('#turns > section.turn').length;
  function keepLastTurns(turns, keep) {
    const n = Number(keep.dataset.keepTurns);
    const shown = Array.from(turns.querySelectorAll(':scope > section.turn'));
    if (shown.length <= 2 * n || firstTurns > n || document.querySelector('.earlier-turns, .later-turns') || later()) return;
    const drop = shown.slice(0, shown.length - n);
    if (drop.some(function (t) { const r = t.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; })) return;
    drop.forEach(function (t) { t.remove(); });
    const control = document.importNode(keep.content, true).firstElementChild;
    const old = document.querySelector('[data-testid="earlier-turns"]');
    if (old) old.replaceWith(control);
    else turns.before(control);
    htmx.process(control);
  }

  // A turn of many steps shows its first and its last (from data-from on),
  // and the steps before them in .turn-earlier: its first step, then each
  // run of steps shown (.earlier-steps: those a control added, those
  // around a linked step) after the control of the steps not shown. A live
  // update of a turn showing such runs, or the step the page links to, is
  // asked to start where the page's first view did (from), and keeps the
  // page's .turn-earlier; another comes with its last steps.
  function anchoredTurns() {
    const m = /^#step-(\d+)$/.exec(location.hash);
    return Array.from(document.querySelectorAll('section.turn[data-from]'), function (t) {
      const keep = t.querySelector(':scope > .turn-earlier .earlier-steps') || (m && t.querySelector('#step-' + m[1]));
      return keep ? t.dataset.from : null;
    }).filter(Boolean);
  }

  // writing is whether the reader has a dialog open (a note) or is in a
  // field of text (the verdict's note), which a reload would lose.
  function writing() {
    const el = document.activeElement;
    return document.querySelector('dialog[open]') !== null || (el !== null && el.matches('textarea, input[type="text"], input:not([type])'));
  }

  // later is the control of the turns after those shown, on a page of the
  // turns around a linked step.
  function later() { return document.querySelector('#turns [data-testid="later-turns"]'); }

  function keepEarlierSteps(old, fresh) {
    const shown = old.querySelector(':scope > .turn-earlier');
    const start = fresh.querySelector(':scope > .turn-earlier');
    if (!shown || !start || !shown.querySelector('.earlier-steps') || fresh.dataset.from !== old.dataset.from) return;
    start.replaceWith(shown);
  }

  function showGone() {
    const session = document.getElementById('session');
    session.dataset.gone = 'true';
    document.getElementById('gone').hidden = false;
    session.querySelectorAll('.actions button').forEach(function (b) { b.disabled = true; });
  }

  // Opening a step loads the rest of its output, and opening a file of the
  // Changes section its diffs, into the details' [data-body]; not while
  // expanding all.
  let expanding = false;
  document.addEventListener('toggle', function (e) {
    const d = e.target;
    if (!(d instanceof HTMLDetailsElement) || !d.hasAttribute('data-partial')) return;
    if (d.open && !expanding) loadBody(d);
  }, true);

  function loadBody(d) {
    d.removeAttribute('data-partial');
    htmx.ajax('GET', d.dataset.bodyUrl, { target: d.querySelector('[data-body]'), swap: 'innerHTML' });
  }

  function setAll(open) {
    expanding = true;
    document.querySelectorAll('details.step, details.subagent').forEach(function (d) { d.open = open; });
    setTimeout(function () { expanding = false; }); // toggle events fire after this task
  }

  // #step-<seq> opens that step and scrolls to it, showing the turns and
  // steps around it (step=) if it is not among those shown.
  function openHash() {
    const m = /^#step-(\d+)$/.exec(location.hash);
    if (!m || !document.getElementById('session')) return;
    const d = document.getElementById('step-' + m[1]);
    if (!d) {
      const around = new URL(location.href);
      if (around.searchParams.get('step') !== m[1]) {
        around.searchParams.delete('turns');
        around.searchParams.set('step', m[1]);
        location.replace(around);
      }
      return;
    }
    d.open = true;
    openEnclosingBlock(d);
    d.scrollIntoView({ block: 'start' });
    d.querySelector('summary').focus({ preventScroll: true });
  }
  window.addEventListener('hashchange', openHash);

  document.addEventListener('click', function (e) {
    // A step named in the export panel: close the panel to show the step.
    const link = e.target.closest('dialog a[href^="#step-"]');
    if (link) link.closest('dialog').close();
    const t = e.target.closest('button');
    if (!t) return;
    if (t.id === 'expand-all') setAll(true);
    if (t.id === 'collapse-all') setAll(false);
    if (t.id === 'export-button') document.getElementById('export-dialog').showModal();
    if (t.id === 'delete-button') document.getElementById('delete-dialog').showModal();
    if (t.dataset.copy) copyText(t);
    if (t.dataset.copyUrl) copyURL(t);
  });

  // copyText puts the text of the element a Copy button names on the
  // clipboard and says so beside it. Where the page may not write to the
  // clipboard (a team server over plain HTTP), it selects the text for the
  // reader to copy.
  async function copyText(button) {
    const el = document.getElementById(button.dataset.copy);
    try {
      await navigator.clipboard.writeText(el.textContent);
      saidBeside(button, 'Copied');
    } catch (err) {
      getSelection().selectAllChildren(el);
      saidBeside(button, 'Selected: press Ctrl+C (⌘C) to copy');
    }
  }

  // copyURL puts what a Copy button's URL answers on the clipboard (a
  // step's redacted Markdown), the fetch inside the clipboard's write so
  // the click still counts as the reader's. Where the page may not write
  // to the clipboard, the answer is downloaded instead.
  async function copyURL(button) {
    const url = button.dataset.copyUrl;
    const text = fetch(url).then(function (res) {
      if (!res.ok) throw new Error('the server answered ' + res.status);
      return res.text();
    }).then(function (t) { return new Blob([t], { type: 'text/plain' }); });
    try {
      if (!navigator.clipboard || !window.ClipboardItem) throw new Error('no clipboard');
      await navigator.clipboard.write([new ClipboardItem({ 'text/plain': text })]);
      saidBeside(button, 'Copied');
    } catch (err) {
      const failed = await text.then(function () { return null; }, function (e) { return e; });
      if (failed) {
        saidBeside(button, 'Not copied: ' + failed.message);
        return;
      }
      location.href = url;
      saidBeside(button, 'Downloaded');
    }
  }

  // saidBeside says what a Copy button did, in its status beside it, for
  // a few seconds.
  function saidBeside(button, what) {
    const said = button.parentElement.querySelector('.copied');
    said.textContent = what;
    clearTimeout(button.copiedTimer);
    button.copiedTimer = setTimeout(function () { said.textContent = ''; }, 3000);
  }

  document.addEventListener('close', async function (e) {
    const dialog = e.target;
    if (dialog.id !== 'delete-dialog' || dialog.returnValue !== 'delete') return;
    // Only a success is one: after any other answer the session is still stored.
    const res = await fetch(dialog.dataset.deleteUrl, { method: 'DELETE' }).catch(function () { return null; });
    if (res && res.ok) {
      location.href = '/';
    } else {
      alert('The session could not be deleted: ' + (res ? res.status : 'the server is unreachable'));
    }
  }, true);

  // On load, not DOMContentLoaded: the browser's own scroll to the fragment
  // comes after DOMContentLoaded and moves the focus off the step's summary.
  window.addEventListener('load', openHash);

  // Subagents: a subagent's steps sit in a details.subagent block under the
  // step that spawned it. A live update keeps opened blocks open, a
  // #step-N link opens the block holding the step, and the actor filter
  // shows the main agent only or one actor.
  function openEnclosingBlock(d) {
    const b = d.closest('details.subagent');
    if (b) b.open = true;
  }

  function keepOpenBlocks(old, fresh) {
    old.querySelectorAll('details.subagent[open]').forEach(function (b) {
      fresh.querySelectorAll('details.subagent').forEach(function (f) {
        if (f.dataset.actorId === b.dataset.actorId) f.open = true;
      });
    });
  }

  // filterTimeline shows what the timeline's filters keep: the actor
  // chosen (Show), and with Only failed or flagged the failed or flagged
  // steps, the subagent blocks holding one and the turns whose header
  // counts one, shown or not.
  function filterTimeline(root, openChosen) {
    const sel = document.getElementById('actor-filter');
    const want = sel ? sel.value : '';
    const box = document.getElementById('problems-only');
    const problems = box !== null && box.checked;
    const turns = root.matches('section.turn') ? [root] : Array.from(root.querySelectorAll('section.turn'));
    turns.forEach(function (t) { t.hidden = problems && !t.hasAttribute('data-problems'); });
    root.querySelectorAll('details.subagent, details.step').forEach(function (el) {
      const sub = el.dataset.actorType === 'subagent';
      const step = el.classList.contains('step');
      let show = true;
      if (want === 'root') show = !sub;
      else if (want !== '') show = sub && el.dataset.actorId === want;
      if (step && el.closest('details.subagent')) show = true; // its block decides
      if (problems) show = show && (step ? el.hasAttribute('data-problem') : el.querySelector('details.step[data-problem]') !== null);
      el.hidden = !show;
      const notes = el.nextElementSibling;
      if (step && notes && notes.classList.contains('step-notes')) notes.hidden = !show;
      if (openChosen && show && want !== '' && want !== 'root' && el.classList.contains('subagent')) el.open = true;
    });
  }

  // The earlier-turns and earlier-steps controls, used by keyboard: the
  // focus goes to the control again when more remain, else to the first
  // step added, not back to the top of the page.
  document.addEventListener('htmx:beforeSwap', function (e) {
    const control = e.detail.target;
    if (!control.matches('button.more') || document.activeElement !== control) return;
    const before = control.previousSibling;
    const parent = control.parentNode;
    document.addEventListener('htmx:afterSettle', function () {
      const next = before ? before.nextElementSibling : parent.firstElementChild;
      const focus = next && (next.matches('button.more') ? next : next.querySelector('details.step > summary'));
      if (focus) focus.focus({ preventScroll: true });
    }, { once: true });
  });

  // Earlier turns shown later follow the filter too.
  document.addEventListener('htmx:afterSettle', function () {
    const timeline = document.getElementById('timeline');
    if (timeline) filterTimeline(timeline, false);
  });

  document.addEventListener('change', function (e) {
    if (e.target.id !== 'actor-filter' && e.target.id !== 'problems-only') return;
    const timeline = document.getElementById('timeline');
    if (timeline) filterTimeline(timeline, true);
    keepFilters();
  });

  // The timeline's filters are kept in the address (only=problems,
  // actor=<id>), so a reload, a link to a step the page did not show (the
  // e key, a report's count) or an address copied keeps them.
  function keepFilters() {
    const u = new URL(location.href);
    const box = document.getElementById('problems-only');
    const sel = document.getElementById('actor-filter');
    if (box && box.checked) u.searchParams.set('only', 'problems');
    else u.searchParams.delete('only');
    if (sel && sel.value) u.searchParams.set('actor', sel.value);
    else u.searchParams.delete('actor');
    history.replaceState(history.state, '', u);
  }

  (function restoreFilters() {
    const timeline = document.getElementById('timeline');
    if (!timeline) return;
    const u = new URL(location.href);
    const box = document.getElementById('problems-only');
    const sel = document.getElementById('actor-filter');
    const actor = u.searchParams.get('actor');
    if (box && u.searchParams.get('only') === 'problems') box.checked = true;
    if (sel && actor && Array.from(sel.options).some(function (o) { return o.value === actor; })) sel.value = actor;
    if ((box && box.checked) || (sel && sel.value)) filterTimeline(timeline, true);
  })();
})();

// Images: a step's thumbnail opens its image whole in a dialog (Esc, the
// close button or a click beside it closes it); a click with a modifier
// opens the image itself, as any link.
(function () {
  let viewer;
  function imageViewer() {
    if (viewer) return viewer;
    viewer = document.createElement('dialog');
    viewer.className = 'image-viewer';
    viewer.dataset.testid = 'image-viewer';
    viewer.tabIndex = -1;
    const form = document.createElement('form');
    form.method = 'dialog';
    const close = document.createElement('button');
    close.textContent = 'Close';
    form.append(close);
    viewer.append(form, document.createElement('img'));
    viewer.addEventListener('click', function (e) { if (e.target === viewer) viewer.close(); });
    document.body.append(viewer);
    return viewer;
  }
  document.addEventListener('click', function (e) {
    const a = e.target.closest('a.thumb');
    if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    const d = imageViewer();
    const img = d.querySelector('img');
    img.src = a.href;
    img.alt = a.querySelector('img').alt;
    d.setAttribute('aria-label', img.alt);
    d.showModal();
    d.focus(); // not its button, which the key that opened it would press
  });
})();
