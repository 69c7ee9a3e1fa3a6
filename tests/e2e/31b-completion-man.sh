#!/usr/bin/env bash
# nnictl's bash completion (contrib/bash-completion/nnictl, through `nnictl __complete`)
# and its man page (build/man/nnictl.1, printed by trialq-mangen) against the command
# table as `nnictl --help` and `nnictl ... --help` print it: completion offers every
# command, every group's commands and every option of every command, an option's
# values, and the ids of a real database's experiments (of --home's database when
# given); the man page names every command and option; `nnictl --version` prints the
# project's version.
. "$(dirname "$0")/lib.sh"

man_dir=$(dirname "$TRIALQ_BIN")/man
comp_file=$TRIALQ_SRC/contrib/bash-completion/nnictl
[ -s "$man_dir/nnictl.1" ] || fail "no man page $man_dir/nnictl.1 (the build makes it)"
[ -s "$man_dir/trialq.1" ] || fail "no man page $man_dir/trialq.1 (the build makes it)"
[ -s "$comp_file" ] || fail "no bash completion $comp_file"

# the table: every command's usage line, and each command's options from its --help
nnictl --help > "$WORK/help"
sed -n 's/^  nnictl //p' "$WORK/help" | awk '{print $1, ($2 ~ /^[a-z]+$/) ? $2 : ""}' > "$WORK/cmds"
ncmds=$(wc -l < "$WORK/cmds")
# the table in cli/nnictl.c has as many entries as --help lists
[ "$ncmds" = "$(sed -n '/cli_commands\[\] = {/,/NULL,/p' "$TRIALQ_SRC/cli/nnictl.c" | grep -o '&cmd_' | wc -l)" ] ||
    fail "nnictl --help lists $ncmds commands, cli/nnictl.c's table has others"
[ "$ncmds" -ge 30 ] || fail "only $ncmds commands in nnictl --help"
opts_of() { nnictl "$@" --help | sed -n '/^options:/,$p' | sed -n 's/^  \(--[A-Za-z_-]*\).*/\1/p'; }

# comp WORD...: what the installed completion function offers when the last WORD is being
# completed, as bash sets COMP_WORDS/COMP_CWORD for it
comp() {
    bash -c '. "$1"; shift
             complete -p nnictl | grep -q -- "-F _nnictl nnictl" || { echo "complete -p: no _nnictl" >&2; exit 1; }
             COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
             _nnictl; [ ${#COMPREPLY[@]} = 0 ] || printf "%s\n" "${COMPREPLY[@]}"' comp "$comp_file" "$BIN_DIR/nnictl" "$@"
}
comp_has() { # comp_has WANT WORD...
    local want=$1
    shift
    comp "$@" > "$WORK/comp"
    grep -qxF -- "$want" "$WORK/comp" || { cat "$WORK/comp" >&2; fail "completing '${*: -1}' after '${*:1:$#-1}': no $want"; }
}

comp "" > "$WORK/top"
checked=0
while read -r first second; do
    grep -qxF "$first" "$WORK/top" || fail "completion of the first word lacks $first"
    if [ -n "$second" ]; then
        comp_has "$second" "$first" ""
        comp_has "$second" "$first" "${second:0:1}"
    fi
    for o in $(opts_of $first $second); do
        comp_has "$o" $first $second --
        [ "$o" = --help ] || grep -qF -- "\\fB$(sed 's/-/\\-/g' <<<"$o")\\fR" "$man_dir/nnictl.1" ||
            fail "the man page lacks $o of nnictl $first $second"
        checked=$((checked + 1))
    done
    # the command's usage line, roff-escaped, is in the man page
    usage=$(grep -m1 "^  nnictl $first${second:+ $second}\\b" "$WORK/help" | sed 's/^  nnictl //')
    grep -qF -- "$(sed 's/-/\\-/g' <<<"$usage")" "$man_dir/nnictl.1" || fail "the man page lacks '$usage'"
done < "$WORK/cmds"
[ "$checked" -ge 60 ] || fail "only $checked options checked"
grep -qxF '.B \-\-help' "$man_dir/nnictl.1" || fail "the man page lacks --help"
comp_has --version ""
comp_has json experiment export x --type ""
comp_has csv experiment export x --type c
comp experiment export x --type c | grep -qx json && fail "json offered for 'c'"
# a file name where the option takes one (compgen -f in the current folder)
mkdir -p "$WORK/files" && touch "$WORK/files/exp.yml"
(cd "$WORK/files" && comp create --config "e") > "$WORK/comp"
[ "$(cat "$WORK/comp")" = exp.yml ] || fail "create --config e completed to: $(cat "$WORK/comp")"
pass "completion offers all $ncmds commands and their $checked options; the man page names them all"

# experiment ids from a real database; none made when the home has none
comp stop "" > "$WORK/none"
[ ! -s "$WORK/none" ] || fail "ids offered without a database: $(cat "$WORK/none")"
[ ! -e "$DB" ] || fail "completion created $DB"
mkdir -p "$WORK/exp"
printf 'echo ok\n' > "$WORK/exp/trial.sh"
write_config "$WORK/exp/a.yml"
ids=()
for i in 1 2; do
    nnictl create --config "$WORK/exp/a.yml" --port "$(free_port)" --foreground > "$WORK/create$i.out" 2>&1 ||
        { cat "$WORK/create$i.out" >&2; fail "create $i"; }
    ids+=("$(exp_id_of "$WORK/create$i.out")")
done
for id in "${ids[@]}"; do
    comp_has "$id" stop ""
    comp_has "$id" experiment show ""
    comp_has "$id" trial ls "${id:0:3}"
    comp_has "$id" update trialnum --value 3 ""
done
comp experiment show "${ids[0]}" "" > "$WORK/second"
[ ! -s "$WORK/second" ] || fail "an id offered as a second argument: $(cat "$WORK/second")"
comp create "" > "$WORK/noid"
[ ! -s "$WORK/noid" ] || fail "ids offered to create: $(cat "$WORK/noid")"
# --home names another home: its ids, not $NNI_HOME's
mkdir -p "$WORK/other"
NNI_HOME=$WORK/other nnictl create --config "$WORK/exp/a.yml" --port "$(free_port)" --foreground > "$WORK/c3.out" 2>&1 ||
    { cat "$WORK/c3.out" >&2; fail "create in the other home"; }
other=$(exp_id_of "$WORK/c3.out")
comp_has "$other" experiment status --home "$WORK/other" ""
comp experiment status --home "$WORK/other" "" | grep -qx "${ids[0]}" && fail "--home's completion offered \$NNI_HOME's id"
comp experiment status "" | grep -qx "$other" && fail "the other home's id offered without --home"
pass "experiment ids completed from the database (${#ids[@]} experiments; --home's own)"

# --version, and the man pages render
[ "$(nnictl --version)" = "$(sed -n 's/^project(trialq VERSION \([0-9.]*\).*/\1/p' "$TRIALQ_SRC/CMakeLists.txt")" ] ||
    fail "nnictl --version: $(nnictl --version)"
if command -v man > /dev/null; then
    for page in nnictl trialq; do
        out=$(MANWIDTH=100 man -l "$man_dir/$page.1" 2>&1 > "$WORK/$page.txt") || fail "man -l $page.1: $out"
        [ -z "$out" ] || fail "man -l $page.1 warned: $out"
        grep -q "^SYNOPSIS" "$WORK/$page.txt" || fail "$page.1 rendered without a SYNOPSIS"
    done
    for role in api worker nnictl; do grep -q "trialq $role" "$WORK/trialq.txt" || fail "trialq.1 lacks the $role role"; done
fi
pass "nnictl --version; man -l renders nnictl.1 and trialq.1"
