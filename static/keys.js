// mailshelf's keyboard shortcuts, the only script its pages run (the pages' Content-Security-Policy
// allows this file by its hash and nothing else). Every page works without it: each key does what
// a link on the page already does.
//
//   j / k   next / previous message: moves the selection in the list, or opens the next or
//           previous message from a message's page (the "Older" and "Newer" links)
//   o, Enter  open the selected message
//   /       search
//   u       back to the list
//   Escape  leave the search box
(function () {
  "use strict";

  // The keys work: say so (the hint at the foot of the page shows only then).
  document.documentElement.classList.add("keys");

  var rows = Array.prototype.slice.call(document.querySelectorAll("table.list tbody tr"));
  var current = -1;

  function link(row) {
    return row.querySelector("td.subject a");
  }

  function select(i) {
    if (!rows.length) {
      return;
    }
    i = Math.max(0, Math.min(rows.length - 1, i));
    if (current >= 0) {
      rows[current].classList.remove("selected");
      rows[current].removeAttribute("aria-current");
    }
    current = i;
    var row = rows[i];
    row.classList.add("selected");
    row.setAttribute("aria-current", "true");
    var a = link(row);
    if (a) {
      a.focus({ preventScroll: true });
    }
    row.scrollIntoView({ block: "nearest" });
  }

  function follow(selector) {
    var a = document.querySelector(selector);
    if (a && a.href) {
      window.location.href = a.href;
      return true;
    }
    return false;
  }

  // Start from the row whose link has the focus (after a click, or Tab).
  document.addEventListener("focusin", function (e) {
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].contains(e.target) && i !== current) {
        select(i);
        return;
      }
    }
  });

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) {
      return;
    }
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName))) {
      if (e.key === "Escape" && t.blur) {
        t.blur();
      }
      return;
    }
    var handled = true;
    switch (e.key) {
      case "j":
        if (rows.length) {
          if (current === rows.length - 1) {
            follow("nav.pager a[rel=next]");
          } else {
            select(current + 1);
          }
        } else {
          handled = follow("a[data-key=next]");
        }
        break;
      case "k":
        if (rows.length) {
          if (current === 0) {
            follow("nav.pager a[rel=prev]");
          } else {
            select(current < 0 ? 0 : current - 1);
          }
        } else {
          handled = follow("a[data-key=prev]");
        }
        break;
      case "Enter":
        if (t && t.tagName === "A") {
          // A focused link opens itself.
          handled = false;
          break;
        }
      // falls through
      case "o":
        if (current >= 0 && link(rows[current])) {
          window.location.href = link(rows[current]).href;
        } else {
          handled = false;
        }
        break;
      case "/":
        var q = document.querySelector("input[name=q]");
        if (q) {
          q.focus();
          q.select();
        } else {
          handled = false;
        }
        break;
      case "u":
        handled = follow("a[data-key=up]") || follow("a.brand");
        break;
      default:
        handled = false;
    }
    if (handled) {
      e.preventDefault();
    }
  });
})();
