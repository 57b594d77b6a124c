// Marks, in the step a search hit links to (/session?id=...&q=words#step-N),
// the words the search matched. Only text nodes are split, so agent
// content stays text.
(function () {
  'use strict';
  const q = new URLSearchParams(location.search).get('q') || '';
  const words = q.toLowerCase().split(/\s+/).filter(Boolean).slice(0, 8);
  if (words.length === 0) return;
  const pattern = new RegExp(words.map(function (w) { return w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }).join('|'), 'gi');

  function target() {
    const m = /^#step-(\d+)$/.exec(location.hash);
    return m ? document.getElementById('step-' + m[1]) : null;
  }

  function mark(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) { return n.parentElement.closest('mark.hit') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT; },
    });
    const nodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    nodes.forEach(function (n) {
      const text = n.nodeValue;
      pattern.lastIndex = 0;
      if (!pattern.test(text)) return;
      const frag = document.createDocumentFragment();
      let at = 0;
      text.replace(pattern, function (match, offset) {
        frag.append(text.slice(at, offset));
        const m = document.createElement('mark');
        m.className = 'hit';
        m.textContent = match;
        frag.append(m);
        at = offset + match.length;
        return match;
      });
      frag.append(text.slice(at));
      n.replaceWith(frag);
    });
  }

  function markTarget() {
    const d = target();
    if (d) mark(d);
  }
  window.addEventListener('load', markTarget);
  window.addEventListener('hashchange', markTarget);
  // A step's full body arrives after it opens: mark that too.
  document.addEventListener('htmx:afterSettle', function (e) {
    const d = target();
    if (d && d.contains(e.target)) mark(d);
  });
})();
