/*
 * version: the one place gtplan's version is written. It appears in
 * `gtplan --version`, the JSON diagnostics and the SARIF log.
 *
 * Ownership: constants only.
 */
#ifndef GTPLAN_VERSION_H
#define GTPLAN_VERSION_H

#define GTPLAN_VERSION "0.1.0"

/* Where gtplan lives, for SARIF's informationUri, and the page that
 * documents every rule (docs/rules.md, one anchor per code: #gt303), for
 * each rule's helpUri. */
#define GTPLAN_HOME_URL "https://github.com/gtplan/gtplan"
#define GTPLAN_RULES_URL GTPLAN_HOME_URL "/blob/main/docs/rules.md"

#endif
