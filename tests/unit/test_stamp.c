/* placeholder: being written */
#include <check.h>
#include <stdlib.h>
int main(void) { return EXIT_SUCCESS; }
