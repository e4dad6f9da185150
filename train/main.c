/* main.c: tune-train's entry point; everything else is in train_main.c and the library.
 * Not for: anything but handing argv over. */
#include "train.h"

int main(int argc, char **argv)
{
    return train_main(argc, argv);
}
