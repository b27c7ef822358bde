build-index/engine/dtype.o: engine/dtype.c engine/ember.h
engine/ember.h:
