// A host program that ships the example kernel the way applications do: nvcc embeds the device
// code as a fatbin in the executable. kqual never runs it; it reads the fatbin out of it.
int main() { return 0; }
