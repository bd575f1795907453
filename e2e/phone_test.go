package e2e

import (
	"testing"
)

// On a phone (390 px), a lesson's own table breaks a code name where its words break
// (cuda-wgmma-|persistent), never inside one ("persisten|t"), and a check-yourself choice that wraps
// continues under its text, not under its radio button. A Hopper GEMM's rung table and quiz have
// both.
func TestLessonTextAtPhoneWidth(t *testing.T) {
	p := openPage(t, 390, 844)
	p.open("a-hopper-gemm")
	split := p.str(`(() => {
  const bad = [];
  for (const c of document.querySelectorAll("article table:not(.cell-table) code")) {
    const t = c.firstChild;
    if (!t || t.nodeType !== Node.TEXT_NODE) continue;
    const r = document.createRange();
    let top = null;
    for (let i = 0; i < t.length; i++) {
      r.setStart(t, i); r.setEnd(t, i + 1);
      const y = r.getBoundingClientRect().top;
      if (top !== null && y > top + 2 && !"-_.:".includes(t.data[i - 1])) bad.push(t.data.slice(0, i) + "|" + t.data.slice(i));
      top = y;
    }
  }
  return bad.join(", ");
})()`)
	if split != "" {
		t.Errorf("code names broken inside a word: %s", split)
	}
	hang := p.str(`(() => {
  const out = [];
  for (const l of document.querySelectorAll(".quiz label:has(> input[type=radio])")) {
    const t = [...l.childNodes].find((n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
    if (!t) continue;
    const r = document.createRange();
    r.selectNodeContents(t);
    const lines = [...r.getClientRects()];
    if (lines.length < 2) continue;
    const start = t.data.search(/\S/);
    r.setStart(t, start); r.setEnd(t, start + 1);
    const first = r.getBoundingClientRect().left;
    if (Math.abs(lines[1].left - first) > 3) out.push(Math.round(first) + " " + Math.round(lines[1].left));
  }
  return out.join(", ") || (document.querySelector(".quiz label:has(> input[type=radio])") ? "" : "no choices");
})()`)
	if hang != "" {
		t.Errorf("wrapped choices whose second line does not start under the first's text (first, second line's left): %s", hang)
	}
	p.errs.check(t, "phone width")
}
