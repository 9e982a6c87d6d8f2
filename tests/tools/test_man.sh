#!/bin/sh
# The man pages (man/) against the pasco command they document:
# - every command `pasco --help` lists (launch, slurm, checkpoint, version)
#   has its page man/pasco-COMMAND.1, and pasco.1 names it in SEE ALSO;
# - every option a command's `pasco COMMAND --help` prints (and every
#   option of `pasco --help`, for pasco.1) is in its page's text;
# - each page renders without a warning: groff -man -ww where groff is
#   installed (and `man -l` where man-db is), otherwise a syntax check of the
#   roff source (.TH first, NAME and SYNOPSIS sections, only the man macros
#   the pages use, no unbalanced font escape).
# usage: test_man.sh PASCO MAN_DIR
set -u
pasco=$1 mandir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

# A page's text: rendered by groff as plain ASCII, one long line per
# paragraph (no hyphenation, no adjusting that could split an option), or,
# without groff, its source with the escapes that spell text undone.
text_of() { # page
	if command -v groff > /dev/null 2>&1; then
		groff -man -Tascii -rLL=1000n -rHY=0 -P-cbou "$1" 2> /dev/null
	else
		sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\%//g' \
			-e 's/\\e/\\/g' -e 's/^\.[A-Z][A-Z]* //' "$1"
	fi
}
# The options a help text names: --word, one a line.
options_in() { grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u; }

"$pasco" --help > "$tmp/help" 2>&1 || { cat "$tmp/help"; fail "pasco --help exits non-zero"; }
commands=$(sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p' "$tmp/help")
if [ -z "$commands" ]; then
	cat "$tmp/help"
	fail "no command found in pasco --help (a line '  COMMAND ...')"
fi
pages="$mandir/pasco.1"
[ -f "$mandir/pasco.1" ] && ok "man/pasco.1 exists" || fail "man/pasco.1 is missing"
[ -f "$mandir/pasco.3" ] && ok "man/pasco.3 exists" || fail "man/pasco.3 is missing"
[ -f "$mandir/pasco.3" ] && pages="$pages $mandir/pasco.3"

# pasco.1: every option pasco --help prints (its own, and those it shows
# with each command), and a SEE ALSO line per command.
if [ -f "$mandir/pasco.1" ]; then
	text_of "$mandir/pasco.1" > "$tmp/pasco.1.txt"
	for opt in $(options_in < "$tmp/help"); do
		grep -q -F -- "$opt" "$tmp/pasco.1.txt" &&
			ok "man/pasco.1 names pasco's $opt" ||
			fail "man/pasco.1 does not name pasco's option $opt (pasco --help prints it)"
	done
fi
for cmd in $commands; do
	page=$mandir/pasco-$cmd.1
	if [ ! -f "$page" ]; then
		fail "pasco --help lists the command '$cmd', which has no page man/pasco-$cmd.1"
		continue
	fi
	ok "pasco $cmd has its page man/pasco-$cmd.1"
	pages="$pages $page"
	grep -q "^\.BR pasco\\\\-$cmd (1)" "$mandir/pasco.1" 2> /dev/null &&
		ok "man/pasco.1 refers to pasco-$cmd(1)" ||
		fail "man/pasco.1 has no '.BR pasco\\-$cmd (1)' line (SEE ALSO)"
	"$pasco" "$cmd" --help > "$tmp/$cmd.help" 2>&1
	text_of "$page" > "$tmp/$cmd.txt"
	n=0 missing=0
	for opt in $(options_in < "$tmp/$cmd.help"); do
		n=$((n + 1))
		grep -q -F -- "$opt" "$tmp/$cmd.txt" && continue
		fail "man/pasco-$cmd.1 does not name $opt, an option of pasco $cmd --help"
		missing=1
	done
	[ "$missing" -eq 0 ] && ok "man/pasco-$cmd.1 names all $n options of pasco $cmd --help"
done

# Rendering: no warning from groff (or man), else the source's syntax.
for page in $pages; do
	name=${page##*/}
	if command -v groff > /dev/null 2>&1; then
		groff -man -Tascii -ww -z "$page" > "$tmp/warn" 2>&1
		if [ -s "$tmp/warn" ]; then
			cat "$tmp/warn"
			fail "groff -man -ww warns on man/$name"
		else
			ok "groff -man -ww renders man/$name without a warning"
		fi
		if command -v man > /dev/null 2>&1; then
			MANWIDTH=80 man --warnings -l "$page" > /dev/null 2> "$tmp/warn"
			[ -s "$tmp/warn" ] && { cat "$tmp/warn"; fail "man -l warns on man/$name"; } ||
				ok "man -l renders man/$name without a warning"
		fi
	else
		bad=$(awk -v f="$name" '
			NR == 1 && !/^\.\\"/ && !/^\.TH / { print f ": the first line is neither a comment nor .TH" }
			/^\.TH / { th = 1 }
			/^\.[A-Za-z]/ && !th { print f ":" NR ": " $1 " before .TH" }
			/^\.SH NAME$/ { name = 1 }
			/^\.SH SYNOPSIS$/ { syn = 1 }
			/^\.[A-Za-z]/ && $1 !~ /^\.(TH|SH|SS|PP|TP|IP|RS|RE|B|I|BR|BI|IR|RB|RI|nf|fi|br)$/ {
				print f ":" NR ": unknown request " $1 }
			/\\f[BI]/ && !/\\f[RP]/ { print f ":" NR ": a bold or italic font escape not set back on its line" }
			END { if (!th) print f ": no .TH"; if (!name) print f ": no .SH NAME";
			      if (!syn) print f ": no .SH SYNOPSIS" }' "$page")
		[ -z "$bad" ] && ok "man/$name: roff syntax (no groff here to render it)" ||
			fail "man/$name: $bad"
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
