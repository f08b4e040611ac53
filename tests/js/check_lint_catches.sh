#!/usr/bin/env bash
# The lint must fail on real mistakes, or its passing on the page says nothing: runs ESLint with
# the page's config on lint_catches.js and checks that it exits 1 and reports each mistake.
#   check_lint_catches.sh ESLINT CONFIG
set -uo pipefail
eslint=$1 config=$(realpath "$2")
# Beside the fixture: Debian's ESLint 6 stops on a file outside its working directory.
cd "$(dirname "$0")"
out=$("$eslint" --no-eslintrc -c "$config" --format unix lint_catches.js 2>&1)
rc=$?
if [ $rc -ne 1 ]; then
  echo "expected ESLint to exit 1 (problems found), got $rc:"; echo "$out"; exit 1
fi
missing=0
# line:rule — an unused variable, a misspelt name, a key given twice, ==, code after return.
for want in 5:no-unused-vars 6:no-undef 7:no-dupe-keys 8:eqeqeq 10:no-unreachable; do
  line=${want%%:*} rule=${want#*:}
  if ! grep -q "lint_catches.js:$line:[0-9]*: .*\[Error/$rule\]" <<<"$out"; then
    echo "not reported: $rule on line $line"; missing=1
  fi
done
if [ $missing -ne 0 ]; then echo "ESLint said:"; echo "$out"; exit 1; fi
echo "ESLint reported all 5 mistakes in lint_catches.js"
