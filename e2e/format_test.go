package e2e

import (
	"encoding/json"
	"testing"
)

// checkFormatNumber: the page shows a table's numbers for people (static/format.js): a budget's
// 7.94·10⁸ s as "794 million", never 7.94e+8; integers below a trillion exactly, with separators.
func checkFormatNumber(t *testing.T, p *browserPage) {
	t.Helper()
	cases := []struct {
		x    float64
		want string
	}{
		{793731041.456, "794 million"}, {2818784.27, "2.82 million"}, {46.7e9 + 0.5, "46.7 billion"}, {5e12, "5 trillion"},
		{3.14e23, "3.14·10²³"}, {1e15, "1·10¹⁵"}, {999999.7, "1 million"}, {-2.5e9 - 0.5, "-2.5 billion"},
		{1048576, "1,048,576"}, {1234.5, "1,235"}, {999.7, "1,000"}, {45.6, "45.6"}, {0.0123, "0.0123"}, {1.2e-7, "1.20e-7"},
	}
	xs := make([]float64, len(cases))
	for i, c := range cases {
		xs[i] = c.x
	}
	arg, err := json.Marshal(xs)
	if err != nil {
		t.Fatal(err)
	}
	out := p.str(`(async () => {
  const { formatNumber } = await import("/static/format.js");
  return JSON.stringify(` + string(arg) + `.map((x) => formatNumber(x)));
})()`)
	var got []string
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != len(cases) {
		t.Fatalf("format.js gave %s (%v)", out, err)
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("formatNumber(%g) = %q, want %q", c.x, got[i], c.want)
		}
	}
}
