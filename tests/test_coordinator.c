#include "helpers.h"
Test(placeholder, none) {}
