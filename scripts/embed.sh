#!/bin/sh
# embed.sh SYMBOL FILE: prints a C file defining
#   const char SYMBOL[]; const unsigned long SYMBOL_len;
# holding FILE's bytes plus a terminating NUL, so the binary carries its
# schemas and needs no install path.
set -eu
sym=$1 file=$2
printf '/* generated from %s by scripts/embed.sh; do not edit */\n' "$file"
printf 'const char %s[] = {\n' "$sym"
od -An -v -tu1 "$file" | awk '{ for (i = 1; i <= NF; i++) printf "%s,", $i; printf "\n" }'
printf '0 };\n'
printf 'const unsigned long %s_len = sizeof(%s) - 1;\n' "$sym" "$sym"
