import Testing
import CLibBSON
@Test func libbsonLinks() {
    let b = bson_new()
    #expect(b != nil)
    bson_destroy(b)
}
