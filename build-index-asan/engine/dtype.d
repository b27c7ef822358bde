build-index-asan/engine/dtype.o: engine/dtype.c engine/ember.h
engine/ember.h:
