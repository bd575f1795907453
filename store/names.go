package store

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// NameKey is what display names are compared by, so that names that differ only by case
// (Unicode full case folding: ÁLICE, álice; Straße, STRASSE), by compatibility forms (fullwidth
// ａｌｉｃｅ, ligatures, NBSP) or by runs of spaces are one name: NFKC, then case folding, then
// NFKC again (the NFKC_Casefold closure), with white space collapsed to single spaces. It does not
// map confusable letters of different scripts to each other (the server refuses names that mix
// scripts, server.validName).
func NameKey(name string) string {
	k := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(name)))
	return strings.Join(strings.Fields(k), " ")
}
