// The review app's verdict and note forms. They send JSON to the verdict
// and note routes; the change event that every write causes then redraws
// the verdict, the notes and the noted step in every tab (app.js). The
// reviewer's name is remembered in this browser. On a team server the
// forms have no name to type: the signed-in user writes them.
(function () {
  'use strict';

  const reviewerKey = 'service.reviewer';

  function reviewerInput() { return document.getElementById('reviewer'); }

  function reviewer() {
    const input = reviewerInput();
    const name = input ? input.value.trim() : '';
    return name || localStorage.getItem(reviewerKey) || '';
  }

  function remember(name) {
    if (name) localStorage.setItem(reviewerKey, name);
  }

  document.addEventListener('DOMContentLoaded', function () {
    const input = reviewerInput();
    const saved = localStorage.getItem(reviewerKey);
    if (input && saved) input.value = saved;
    if (input) input.addEventListener('change', function () { remember(input.value.trim()); });
  });

  // send makes one write and returns '' or what went wrong, in words.
  async function send(method, url, body) {
    const init = { method: method, headers: {} };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch(url, init).catch(function () { return null; });
    if (!res) return 'the server is unreachable';
    if (res.ok) return '';
    const e = await res.json().catch(function () { return {}; });
    let msg = e.error || String(res.status);
    if (e.details && e.details.length) {
      msg += ': ' + e.details.map(function (d) { return d.path + ' ' + d.message; }).join('; ');
    }
    return msg;
  }

  function setStatus(form, text) {
    const s = form.querySelector('.form-status');
    if (s) s.textContent = text;
  }

  document.addEventListener('submit', async function (e) {
    const form = e.target;
    if (form.id !== 'verdict-form') return;
    e.preventDefault();
    const f = form.elements;
    // A common state's button saves it as the verdict.
    const quick = e.submitter && e.submitter.dataset.state;
    if (quick) f.namedItem('state').value = quick;
    const body = { state: f.namedItem('state').value.trim() };
    if (f.namedItem('note').value.trim()) body.note = f.namedItem('note').value;
    const who = f.namedItem('reviewer') ? f.namedItem('reviewer').value.trim() : '';
    if (who) {
      body.reviewer = who;
      remember(who);
    }
    setStatus(form, 'Saving…');
    const err = await send('PUT', form.dataset.verdictUrl, body);
    setStatus(form, err ? 'Not saved: ' + err : 'Saved');
  });

  // The note dialog remembers what it is writing: a new note on a step, or
  // an edit of a note.
  let editing = null; // { seq, noteID } while the dialog is open

  function openNoteDialog(seq, noteID, text) {
    const dialog = document.getElementById('note-dialog');
    if (!dialog) return;
    editing = { seq: seq, noteID: noteID };
    document.getElementById('note-dialog-seq').textContent = seq;
    const area = dialog.querySelector('textarea');
    area.value = text || '';
    const author = dialog.querySelector('input[name="author"]');
    if (author) author.value = reviewer();
    dialog.showModal();
    area.focus();
  }

  document.addEventListener('click', async function (e) {
    const b = e.target.closest('button');
    if (!b) return;
    if (b.id === 'verdict-clear') {
      const form = document.getElementById('verdict-form');
      setStatus(form, 'Clearing…');
      const err = await send('DELETE', form.dataset.verdictUrl);
      if (!err) {
        form.elements.namedItem('state').value = '';
        form.elements.namedItem('note').value = '';
      }
      setStatus(form, err ? 'Not cleared: ' + err : 'Cleared');
    } else if (b.classList.contains('note-add')) {
      openNoteDialog(b.dataset.seq, null, '');
    } else if (b.classList.contains('note-edit')) {
      const text = b.closest('.note').querySelector('.note-text').textContent;
      openNoteDialog(b.dataset.seq, b.dataset.noteId, text);
    } else if (b.classList.contains('note-delete')) {
      if (!confirm('Delete this note?')) return;
      const url = document.getElementById('note-dialog').dataset.notesUrl + '/' + b.dataset.noteId;
      const err = await send('DELETE', url);
      if (err) alert('The note could not be deleted: ' + err);
    }
  });

  document.addEventListener('close', async function (e) {
    const dialog = e.target;
    if (dialog.id !== 'note-dialog' || !editing) return;
    const what = editing;
    editing = null;
    if (dialog.returnValue !== 'save') return;
    const text = dialog.querySelector('textarea').value;
    const body = { text: text };
    const input = dialog.querySelector('input[name="author"]');
    if (input) {
      body.author = input.value.trim();
      remember(body.author);
    }
    let err;
    if (what.noteID) {
      err = await send('PUT', dialog.dataset.notesUrl + '/' + what.noteID, body);
    } else {
      body.seq = Number(what.seq);
      err = await send('POST', dialog.dataset.notesUrl, body);
    }
    if (err) alert('The note was not saved: ' + err);
  }, true);
})();
