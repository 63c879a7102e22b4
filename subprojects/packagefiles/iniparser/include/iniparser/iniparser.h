/* Upstream installs iniparser.h at the top level; Debian under
 * iniparser/. The engine includes <iniparser/iniparser.h>. */
#include "../../src/iniparser.h"
