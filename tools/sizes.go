package tools

import "fmt"

// sizeWords renders a byte count for people: "512 bytes", "1.5 KiB".
func sizeWords(n int64) string {
	const unit = 1024
	if n < unit {
		if n == 1 {
			return "1 byte"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeMsg says that something is larger than a limit.
func sizeMsg(what string, n, limit int64) string {
	return fmt.Sprintf("%s is %s (%d bytes), over the limit of %d bytes", what, sizeWords(n), n, limit)
}
