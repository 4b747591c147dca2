// The portal's only script (served from /portal/static, allowed by the page's Content-Security-Policy; no inline
// script anywhere). Niceties only: every page works without it.
/* global document */
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  // Ask before destructive actions (delete a tool, revoke a key).
  for (const form of document.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (event) => {
      if (!globalThis.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  }

  // Copy the newly generated key.
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', () => {
      const target = document.getElementById(button.getAttribute('data-copy'));
      if (target && navigator.clipboard) {
        navigator.clipboard.writeText(target.textContent).then(() => {
          button.textContent = 'Copied';
        });
      }
    });
  }

  // Say at once when a JSON box does not hold JSON (the server checks again and says the same).
  for (const area of document.querySelectorAll('textarea[data-json]')) {
    const note = document.createElement('p');
    note.className = 'field-error';
    note.hidden = true;
    area.after(note);
    area.addEventListener('input', () => {
      try {
        JSON.parse(area.value);
        note.hidden = true;
        area.removeAttribute('aria-invalid');
      } catch (error) {
        note.textContent = `Not valid JSON yet: ${error.message}`;
        note.hidden = false;
      }
    });
  }
});
