#!/usr/bin/env bash
# Public API types (top-level + nested, implicit-public members of interfaces included) of the published modules,
# from compiled classes, excluding *.internal packages.
# Usage: .ci/public-types.sh [repo root], after mvn -B -o -q compile -pl txoutbox-core,txoutbox-kafka,txoutbox-test,txoutbox-spring-boot-starter -am
cd "${1:-.}"
files=$(find txoutbox-core/target/classes txoutbox-kafka/target/classes txoutbox-test/target/classes txoutbox-spring-boot-starter/target/classes -name '*.class' ! -name 'package-info.class' ! -path '*/internal/*' | grep -v -E '\$[0-9]')
javap -public $files 2>/dev/null | grep -E '^(public|protected)? ?.*\b(class|interface|enum)\b [a-z0-9_.]+\.[A-Za-z0-9_$]+' | grep -E '^public' | sed -E 's/ (extends|implements|permits) .*//; s/\{.*//' | sed -E "s/<.*//" | awk '{print $NF}' | sort -u
