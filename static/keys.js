// Keyboard shortcuts, on every page: / search, f find in this session (a
// session's page), j/k move through list rows, timeline steps or search
// hits, Enter opens, o/O expand/collapse all, [/] previous/next turn, e/E
// next/previous failed or flagged step of the session, p only those on or
// off, v the verdict's buttons, a a note on the selected step, n the next
// session not reviewed, g then s sessions, g then u usage, ? the list of
// shortcuts.
// None fires while typing in a field, with a modifier held, or while a
// dialog is open.
(function () {
  'use strict';

  // The items j/k move through: the session list's rows, the timeline's
  // steps (those its filters show), or the search's hits.
  function items() {
    return Array.from(document.querySelectorAll('tr[data-testid="session-row"], details.step, li[data-testid="search-hit"]'))
      .filter(function (el) { return !el.closest('[hidden]'); }); // not those a filter hides
  }

  // The element of an item that takes focus and opens it: a row's title
  // link, a step's summary, a hit's link to its step.
  function handle(item) {
    if (item.matches('tr')) return item.querySelector('a[data-testid="title"]');
    if (item.matches('li')) return item.querySelector('a[data-testid="search-hit-link"]');
    return item.querySelector('summary');
  }

  // The selection is kept by id: a live refresh redraws the rows and turns,
  // and the new element of the selected item is marked again, and focused
  // again if the focus went with the old one.
  let currentID = '';
  let focused = null;
  function current() {
    const el = currentID ? document.getElementById(currentID) : null;
    if (el) el.classList.add('kb-current');
    return el;
  }
  new MutationObserver(function () {
    const el = current();
    if (el && focused && !focused.isConnected && document.activeElement === document.body) {
      focused = handle(el);
      focused.focus({ preventScroll: true });
    }
  }).observe(document.documentElement, { childList: true, subtree: true });

  // mark makes item the current one.
  function mark(item) {
    const was = current();
    if (was) was.classList.remove('kb-current');
    currentID = item.id;
    item.classList.add('kb-current');
    focused = handle(item);
  }

  // select marks item and focuses it, opening the subagent blocks it is in
  // (closed, a step of theirs is not seen).
  function select(item) {
    for (let b = item.closest('details.subagent'); b; b = b.parentElement.closest('details.subagent')) b.open = true;
    mark(item);
    focused.focus({ preventScroll: true });
    item.scrollIntoView({ block: 'nearest' });
  }

  // move selects the next (+1) or previous (-1) item; past the first or
  // the last step shown, the turns before or after (moreTurns).
  function move(by) {
    const all = items();
    if (all.length === 0) return;
    const i = all.indexOf(current());
    if (i >= 0 && moreTurns(by, i + by < 0 || i + by >= all.length, items, all[i], select)) return;
    select(all[i < 0 ? (by > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, i + by))]);
  }

  // turn moves to the previous (-1) or next (+1) turn from the one on top
  // of the viewport, or holding the current step; past the first or the
  // last turn shown, to the turns before or after (moreTurns).
  function turn(by) {
    const all = function () { return Array.from(document.querySelectorAll('section.turn')); };
    const turns = all();
    if (turns.length === 0) return;
    const cur = current() && current().closest('section.turn');
    let i = cur ? turns.indexOf(cur) : turns.findIndex(function (t) { return t.getBoundingClientRect().bottom > 1; });
    if (i < 0) i = turns.length - 1;
    if (moreTurns(by, i + by < 0 || i + by >= turns.length, all, turns[i], showTurn)) return;
    showTurn(turns[Math.min(turns.length - 1, Math.max(0, i + by))]);
  }

  // moreTurns, when past is true (a move past the first or the last of
  // the list now) and the page has the earlier-turns (by -1) or the
  // later-turns (+1) control, uses it and, once its turns are there, calls
  // then with the element of list() beside edge; false when it has none.
  function moreTurns(by, past, list, edge, then) {
    const more = past && document.querySelector(by < 0 ? '[data-testid="earlier-turns"]' : '[data-testid="later-turns"]');
    if (!more) return false;
    whenDone(document.getElementById('timeline'), function () {
      const now = list();
      const k = now.indexOf(edge);
      if (k < 0) return true; // redrawn meanwhile by a live update: stay
      if (now[k + by]) then(now[k + by]);
      return now[k + by] !== undefined;
    });
    more.click();
    return true;
  }

  function showTurn(t) {
    const step = t.querySelector('details.step');
    if (step) select(step);
    t.scrollIntoView({ block: 'start' });
  }

  // problem moves to the next (+1) or previous (-1) failed or flagged step
  // from the current step (from the top without one), going round at
  // either end. A page that leaves steps out (the middle of a long turn,
  // earlier or later turns: a control shows them) asks the server for the
  // next of all the session's (/session/problem), and a step it does not
  // show is opened by its link (#step-N, app.js), which reads the steps
  // around it; one the timeline's filters hide, or no answer, falls back
  // to the steps shown. Presses wait for the one before, so each goes on
  // from the step it selected.
  let asked = Promise.resolve();
  function problem(by) {
    const session = document.getElementById('session');
    if (!session || !session.querySelector('button.more')) {
      problemShown(by);
      return;
    }
    asked = asked.then(function () {
      const c = current();
      const from = c && c.matches('details.step') ? c.dataset.seq : (by > 0 ? '-1' : String(Number.MAX_SAFE_INTEGER));
      const url = '/session/problem?id=' + encodeURIComponent(session.dataset.sessionId) + (by > 0 ? '&after=' : '&before=') + from;
      return fetch(url).then(function (r) { return r.ok ? r.json() : null; }).catch(function () { return null; }).then(function (a) {
        if (!a) { problemShown(by); return; }
        if (a.seq === undefined) return; // none in the session
        const el = document.getElementById('step-' + a.seq);
        if (!el) { openLink('#step-' + a.seq); return; }
        if (el.closest('[hidden]')) { problemShown(by); return; }
        select(el);
      });
    });
  }

  // problemShown is problem among the steps the page shows.
  function problemShown(by) {
    const steps = items();
    const problems = steps.filter(function (s) { return s.hasAttribute('data-problem'); });
    if (problems.length === 0) return;
    const at = steps.indexOf(current());
    const after = problems.filter(function (s) { return by > 0 ? steps.indexOf(s) > at : at >= 0 && steps.indexOf(s) < at; });
    select(by > 0 ? (after[0] || problems[0]) : (after[after.length - 1] || problems[problems.length - 1]));
  }

  // openLink follows a #step-N link as a click on it would, also when the
  // address has it already.
  function openLink(hash) {
    if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
    else location.hash = hash;
  }

  // The step a link names (#step-N, which app.js opens and focuses) is the
  // current one, so j, e and the others go on from it.
  function markLinked() {
    const m = /^#step-(\d+)$/.exec(location.hash);
    const el = m && document.getElementById('step-' + m[1]);
    if (el) mark(el);
  }
  window.addEventListener('load', markLinked);
  window.addEventListener('hashchange', markLinked);

  function typing(el) {
    if (el && el.tagName === 'INPUT' && /^(checkbox|radio|button|submit|reset)$/.test(el.type)) return false; // nothing is typed there
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  // The pages g then a key goes to.
  const goTo = { s: '/', u: '/usage' };
  let pendingG = false;
  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || document.querySelector('dialog[open]')) return;
    const g = pendingG;
    pendingG = false;
    if (g && goTo[e.key]) {
      location.href = goTo[e.key];
      return;
    }
    let done = true;
    switch (e.key) {
      case '/': {
        const box = document.querySelector('[data-testid="search-input"]') || document.querySelector('[data-testid="topbar-search"]');
        box.focus();
        box.select();
        break;
      }
      case 'f': done = focusOn('[data-testid="session-search-input"]'); break;
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'Enter': {
        // Only when nothing else has the focus (a live refresh drops it):
        // on a link, a button or the selected item the browser acts itself.
        const c = current();
        if (!c || (document.activeElement && document.activeElement !== document.body)) { done = false; break; }
        handle(c).click();
        break;
      }
      case 'o': click('expand-all'); break;
      case 'O': click('collapse-all'); break;
      case '[': turn(-1); break;
      case ']': turn(1); break;
      case 'e': problem(1); break;
      case 'E': problem(-1); break;
      case 'p': click('problems-only'); break;
      case 'v': done = focusOn('[data-testid="verdict-quick"]'); break;
      case 'a': {
        // The step's Add note button (review.js opens its dialog), there
        // when notes can be written; the step opens to show what is noted.
        const c = current();
        const add = c && c.matches('details.step') && document.querySelector('[data-testid="step-notes"][data-seq="' + c.dataset.seq + '"] .note-add');
        if (!add) { done = false; break; }
        c.open = true;
        add.click();
        break;
      }
      case 'c': {
        // The step's Copy as Markdown button (app.js copies), in its
        // details: the step opens, and its details may load first.
        const c = current();
        if (!c || !c.matches('details.step')) { done = false; break; }
        c.open = true;
        whenThere(c, '[data-testid="step-copy-md"]', function (b) { b.click(); });
        break;
      }
      case 'n': {
        const next = document.querySelector('[data-testid="next-unreviewed"] a');
        if (!next) { done = false; break; }
        next.click();
        break;
      }
      case 'g': pendingG = true; break;
      case '?': document.getElementById('keys-dialog').showModal(); break;
      default: done = false;
    }
    if (done) e.preventDefault();
  });

  // whenThere calls then with the first element in root sel matches, now
  // or once it is there (within five seconds).
  function whenThere(root, sel, then) {
    whenDone(root, function () {
      const el = root.querySelector(sel);
      if (el) then(el);
      return el !== null;
    });
  }

  // whenDone calls done now and after each change under root until it
  // says it is done (true), for at most five seconds.
  function whenDone(root, done) {
    if (done()) return;
    const watch = new MutationObserver(function () { if (done()) watch.disconnect(); });
    watch.observe(root, { childList: true, subtree: true });
    setTimeout(function () { watch.disconnect(); }, 5000);
  }

  // focusOn focuses the first element sel matches and scrolls it to the
  // middle of the screen; false when the page has none.
  function focusOn(sel) {
    const el = document.querySelector(sel);
    if (!el) return false;
    el.focus({ preventScroll: true });
    el.scrollIntoView({ block: 'center' });
    return true;
  }

  function click(id) {
    const b = document.getElementById(id);
    if (b) b.click();
  }
})();
