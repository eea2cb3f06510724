package tools

import (
	"fmt"
	"strings"
)

// prompt renders the profile's markdown section on how to use the
// workspace.
func (p Profile) prompt() string {
	name := func(tool string) string {
		if p.Name == "consolidated" {
			return fmt.Sprintf("`%s` with action `%s`", ConsolidatedTool, tool)
		}
		return "`" + tool + "`"
	}
	has := func(tool string) bool {
		if p.Name == "consolidated" {
			return true
		}
		for _, t := range p.Tools {
			if t == tool {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	b.WriteString("## Workspace\n\n")
	b.WriteString("You work in a private, copy-on-write workspace. It starts empty except for the host folders mounted into it; nothing outside it is visible, and nothing you change reaches the host until someone applies it.\n\n")
	fmt.Fprintf(&b, "- **Look before you act.** List a directory with %s before reading files you have not seen", name("list_directory"))
	if has("glob") {
		fmt.Fprintf(&b, "; find files with %s and text with %s", name("glob"), name("grep"))
	}
	b.WriteString(". Paths are relative to the workspace root.\n")
	fmt.Fprintf(&b, "- **Read before you edit.** Read a file with %s before changing it, so your change matches its current text.\n", name("read_file"))
	switch p.Editing {
	case "apply_patch":
		fmt.Fprintf(&b, "- **Prefer patches to rewrites.** Change existing files with %s (V4A: `*** Begin Patch` … `*** End Patch`); it applies all of a patch or none of it. Use %s only for new files or complete rewrites.\n", name("apply_patch"), name("write_file"))
	case "edit_file":
		fmt.Fprintf(&b, "- **Prefer edits to rewrites.** Change existing files with %s: give old_string exactly as the file has it, with enough context to be unique. Use %s only for new files or complete rewrites.\n", name("edit_file"), name("write_file"))
	default:
		fmt.Fprintf(&b, "- **Write whole files** with %s; read the file first so you keep what you do not mean to change.\n", name("write_file"))
	}
	b.WriteString("- **Failures are receipts.** A call that fails changes nothing and says why in summary_text, with an error_code; fix what it names and try again.\n")
	fmt.Fprintf(&b, "- **Clean up.** Delete scratch files you created with %s before you finish.\n", name("delete_file"))
	return b.String()
}
