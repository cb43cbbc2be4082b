/*
 * version: the one place gtplan's version is written. It appears in
 * `gtplan --version`, the JSON diagnostics and the SARIF log.
 *
 * Ownership: constants only.
 */
#ifndef GTPLAN_VERSION_H
#define GTPLAN_VERSION_H

#define GTPLAN_VERSION "0.1.0"

#endif
