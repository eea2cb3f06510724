package coord

import "unicode/utf8"

func utf8Valid(s string) bool { return utf8.ValidString(s) }
