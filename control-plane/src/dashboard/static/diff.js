// A line diff (longest common subsequence), for showing a user's edit against the server's
// version after a 412: "-" lines are only in the server's version, "+" lines only in the edit.
/* global window */
"use strict";

(() => {
  /** Diff of two texts as [{op: " " | "-" | "+", line}], in order. */
  function lineDiff(serverText, editText) {
    const a = serverText.split("\n");
    const b = editText.split("\n");
    const n = a.length;
    const m = b.length;
    // lcs[i][j] = length of the LCS of a[i..] and b[j..]; policies are small, so O(n*m) is fine.
    const lcs = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
    const out = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[i] === b[j]) {
        out.push({ op: " ", line: a[i] });
        i++;
        j++;
      } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) {
        // Removed lines before added ones, as a unified diff reads.
        out.push({ op: "-", line: a[i] });
        i++;
      } else {
        out.push({ op: "+", line: b[j] });
        j++;
      }
    }
    return out;
  }

  window.tokentraceDiff = { lineDiff };
})();
