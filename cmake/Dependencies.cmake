# All third-party code comes from Debian's packages through find_package / pkg-config.
# Static archives are preferred where Debian ships them, so that binaries built here run unchanged
# on a GPU machine that lacks these packages.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(absl REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# cpp-httplib: `samebits serve` and client mode (Debian builds it with OpenSSL, so https targets work).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# Tokenizers of real checkpoints: the pre-tokenizer's pattern needs Unicode properties (PCRE2),
# the normaliser NFC (ICU).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET icu-uc)
if(SAMEBITS_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SAMEBITS_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# xxHash: link the static archive when present (the .pc file names only the shared one).
find_library(XXHASH_STATIC_LIB NAMES libxxhash.a PATHS ${XXHASH_LIBRARY_DIRS} NO_DEFAULT_PATH)
add_library(samebits_xxhash INTERFACE)
target_include_directories(samebits_xxhash INTERFACE ${XXHASH_INCLUDE_DIRS})
if(XXHASH_STATIC_LIB)
  target_link_libraries(samebits_xxhash INTERFACE ${XXHASH_STATIC_LIB})
else()
  target_link_libraries(samebits_xxhash INTERFACE PkgConfig::XXHASH)
endif()
